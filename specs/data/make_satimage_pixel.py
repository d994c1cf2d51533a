"""Build specs/data/satimage_pixel_{train,test}.npz: a real regression task from satimage.

Statlog Landsat rows are 3 x 3 pixel neighbourhoods, 4 spectral bands each (attributes 1-36, the
central pixel is attributes 17-20).  The task: predict the central pixel's band-3 value (near
infrared, attribute 19) from the 32 values of its 8 neighbours (spatial interpolation).  Inputs
are the raw uint8 values (the spec standardises them); the target is centred and scaled by the
mean and standard deviation of the training targets.  1000 training rows (seeded, stratified by
the soil class) from the given training set, 1000 test rows likewise from the given test set.

    python specs/data/make_satimage_pixel.py [DATA_ROOT]   # default ../shared/data
"""

import sys
from pathlib import Path

import numpy as np

from gpmodels.data.splits import subsample

CENTRE = slice(16, 20)
TARGET = 18  # 0-based: attribute 19, band 3 of the central pixel


def main(root: Path, out: Path) -> None:
    parts = {}
    for part in ("train", "test"):
        with np.load(root / "satimage" / f"{part}.npz") as z:
            X, y = z["X"], z["y"]
        keep = subsample(y.size, 1000, 0 if part == "train" else 1, y=y)
        parts[part] = (np.delete(X[keep], np.r_[CENTRE], axis=1), X[keep, TARGET].astype(np.float64))
    mean, std = parts["train"][1].mean(), parts["train"][1].std()
    for part, (X, t) in parts.items():
        np.savez_compressed(out / f"satimage_pixel_{part}.npz", X=X, y=(t - mean) / std)
    print(f"target mean {mean:.4f}, std {std:.4f}; wrote {out}/satimage_pixel_{{train,test}}.npz")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[2] / "shared" / "data", here)
