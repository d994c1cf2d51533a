"""Hypothesis strategies for random rooted trees (unequal leaf depths, chains, single leaves)."""

from hypothesis import strategies as st


@st.composite
def random_trees(draw, max_nodes=14):
    """Edge list (parent, child) of a random tree with root 'root'; node names are strings."""
    n = draw(st.integers(1, max_nodes))
    edges = []
    names = ["root"]
    for i in range(n):
        parent = draw(st.sampled_from(names))
        name = draw(st.sampled_from([f"n{i}", f"node {i}", f"ü{i}/x", f"{i}"]))
        edges.append((parent, name))
        names.append(name)
    return edges
