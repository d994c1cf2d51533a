/*
 * Compiled inner loop of the Crammer–Singer solver (Crammer & Singer 2001, Fig. 3, Fig. 4, Sec. 7);
 * the Python side and the choice of a CPython extension are described in cs_loops.py.
 *
 * The Python driver (crammer_singer.py) owns every array the algorithm keeps between rounds and
 * hands them to a Solver once; the Solver updates them in place, so the driver's per-round trace,
 * the duality gap and the final reordering are the same code for both engines.  Layout (the numpy
 * engine's): *position* order, the active set A = positions 0..nA-1,
 *
 *   F    (k, m)  F_ir = sum_j K_ij tau_jr - beta delta_{y_i r}            (eq. 23), class-major
 *   tau  (k, m)  the dual variables tau_i = 1_{y_i} - eta_i               (eq. 15)
 *   pen  (k, m)  0 where tau_ir < delta_{y_i r} (allowed in the min of eq. 32), +inf else
 *   y, A, perm (m,)  labels, K(x_i, x_i), position -> example;  pos (m,) example -> position
 *
 * Kernel rows live in a pool of `cap` rows (memory owned by Python, within the solver's bound) and,
 * unlike the numpy engine's, in *position* order: pool[s][j] = K(x_p, x_perm[j]) for the example p
 * in slot s.  A row is brought in from its source in example order and permuted once; every swap of
 * two positions swaps those two entries of every pooled row (libsvm's Cache::swap_index does the
 * same when it shrinks).  In exchange the F update on A reads the contiguous prefix row[0..nA) and
 * the deferred update of A^c the contiguous rest, with no gathers: the rows of the support patterns
 * are read ~30 times each, but a position swap happens about once per example entering A.
 *
 *   cache   (LRU) `cap` >= 1 rows, least recently used evicted; F on A^c updated lazily
 *   no cache        one row recomputed on every request (Fig. 7's version without a cache);
 *                   F on A^c updated at once, as the row would be recomputed at the sync
 *
 * The source of a missing row is a stored Gram matrix (gram[p][perm[j]], read here) or a Python
 * callable fill(p, slot) that writes K(x_p, .) in example order into pool[slot] (the kernel object).
 *
 * The floating-point operations on F follow the numpy engine's order (F + dt*K per class, no FMA
 * contraction: -ffp-contract=off), so on A both engines compute the same numbers; the deferred
 * update of A^c sums the pending terms in another order than numpy's GEMM.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    Py_buffer views[9];
    int n_views;
    double *F, *tau, *pen, *A, *pool;
    const double *gram; /* source of rows, example order; NULL: call fill */
    int64_t *y, *perm, *pos;
    Py_ssize_t m, k, cap, nA;
    int lru, active, lazy, exact, perm_identity;
    double fp_tol;
    long fp_max_iter;
    PyObject *fill;
    /* LRU map over pool slots: slot_of[example] = slot or -1; a doubly linked list, head = LRU */
    int64_t *slot_of, *slot_ex, *prev, *next;
    int64_t head, tail, used;
    /* Δτ of the active set's updates since the last sync, per example, in first-update order */
    int64_t *pend_list, *pend_at;
    double *pend_dt;
    Py_ssize_t n_pend;
    /* scratch */
    double *row_tmp, *D, *nu, *newt, *dt, *sorted;
    const double **rowp;
    /* counters */
    long long updates, hits, misses, evictions, syncs, fp_steps, swaps;
    long long scans, psi_active, psi_rest, axpy_active, axpy_rest; /* work counters (positions visited) */
    /* argmax of psi over A from the last update (valid while A is unchanged) */
    int have_best;
    Py_ssize_t best_j;
    double best_v;
} Solver;

/* ------------------------------------------------------------------ reduced problem (34) */

/* theta* of eq. (37) by sorting (eq. 42): with d sorted decreasingly, theta* = (sum_{r<=s} d_r - 1)/s
   for the largest s with that candidate below d_s.  Same operation order as reduced_problem.theta_exact. */
static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, z = *(const double *)b;
    return (x < z) - (x > z);
}

static double theta_exact(const double *D, double *d, Py_ssize_t k)
{
    memcpy(d, D, (size_t)k * sizeof(double));
    if (k <= 32) { /* insertion sort, decreasing */
        for (Py_ssize_t i = 1; i < k; i++) {
            double v = d[i];
            Py_ssize_t j = i - 1;
            while (j >= 0 && d[j] < v) { d[j + 1] = d[j]; j--; }
            d[j + 1] = v;
        }
    } else {
        qsort(d, (size_t)k, sizeof(double), cmp_desc);
    }
    double cums = 0.0, theta = d[0] - 1.0;
    for (Py_ssize_t s = 0; s < k; s++) {
        cums += d[s];
        double cand = (cums - 1.0) / (double)(s + 1);
        if (cand < d[s]) theta = cand;
    }
    return theta;
}

/* nu* = min(theta*, D), the exact minimiser of (34) */
static void solve_exact(Solver *S, const double *D, double *nu)
{
    double th = theta_exact(D, S->sorted, S->k);
    for (Py_ssize_t r = 0; r < S->k; r++) nu[r] = th < D[r] ? th : D[r];
}

/* Fig. 3: theta_{l+1} = (1/k) sum_r max(theta_l, D_r) - 1/k (eq. 39) until |theta_l - theta_{l+1}| <=
   tol |theta_l|; nu_r = min(theta, D_r), then the feasibility repair of reduced_problem.py (the
   coordinates at theta share rho = sum D - 1 - sum nu in proportion to their room D_r - nu_r).
   Operation order of reduced_problem.fixed_point_list. */
static void solve_fixed_point(Solver *S, const double *D, double theta, double *nu)
{
    Py_ssize_t k = S->k;
    double th = theta;
    long it = 0;
    while (it < S->fp_max_iter) {
        it++;
        double s = -1.0;
        for (Py_ssize_t r = 0; r < k; r++) s += D[r] > th ? D[r] : th;
        double nw = s / (double)k;
        int done = fabs(th - nw) <= S->fp_tol * fabs(th);
        th = nw;
        if (done) break;
    }
    S->fp_steps += it;
    double sd = 0.0, sn = 0.0;
    for (Py_ssize_t r = 0; r < k; r++) {
        nu[r] = D[r] < th ? D[r] : th;
        sd += D[r];
        sn += nu[r];
    }
    double rho = (sd - 1.0) - sn;
    if (rho > 0.0) {
        double room = 0.0;
        for (Py_ssize_t r = 0; r < k; r++) room += D[r] - nu[r];
        double f = rho / room;
        for (Py_ssize_t r = 0; r < k; r++) nu[r] = nu[r] + (D[r] - nu[r]) * f;
    } else if (rho < 0.0) { /* round-off past theta*: the coordinates at theta move down together */
        Py_ssize_t n_at = 0;
        for (Py_ssize_t r = 0; r < k; r++) n_at += D[r] > nu[r];
        if (n_at) {
            double share = rho / (double)n_at;
            for (Py_ssize_t r = 0; r < k; r++)
                if (D[r] > nu[r]) nu[r] += share;
        }
    }
}

/* ------------------------------------------------------------------ kernel rows */

static void lru_unlink(Solver *S, int64_t s)
{
    int64_t a = S->prev[s], b = S->next[s];
    if (a >= 0) S->next[a] = b; else S->head = b;
    if (b >= 0) S->prev[b] = a; else S->tail = a;
    S->prev[s] = S->next[s] = -1;
}

static void lru_append(Solver *S, int64_t s)
{
    S->prev[s] = S->tail;
    S->next[s] = -1;
    if (S->tail >= 0) S->next[S->tail] = s; else S->head = s;
    S->tail = s;
}

/* K(x_p, x_perm[j]), j = 0..m-1, into `out`; -1 with a Python error set when fill failed */
static int load_row(Solver *S, int64_t p, int64_t slot, double *out)
{
    Py_ssize_t m = S->m;
    const int64_t *perm = S->perm;
    if (S->gram != NULL) {
        const double *g = S->gram + p * m;
        if (S->perm_identity) memcpy(out, g, (size_t)m * sizeof(double));
        else for (Py_ssize_t j = 0; j < m; j++) out[j] = g[perm[j]];
        return 0;
    }
    PyObject *r = PyObject_CallFunction(S->fill, "LL", (long long)p, (long long)slot);
    if (r == NULL) return -1;
    Py_DECREF(r);
    if (!S->perm_identity) {
        double *t = S->row_tmp;
        for (Py_ssize_t j = 0; j < m; j++) t[j] = out[perm[j]];
        memcpy(out, t, (size_t)m * sizeof(double));
    }
    return 0;
}

/* The row of example p in position order; NULL with a Python error set when fill failed.
   LRU semantics of kernel_cache.KernelRows: a hit moves the row to the most recent end, a miss
   evicts the least recently used row when the pool is full. */
static const double *get_row(Solver *S, int64_t p)
{
    Py_ssize_t m = S->m;
    if (!S->lru) {
        S->misses++;
        return load_row(S, p, 0, S->pool) < 0 ? NULL : S->pool;
    }
    int64_t s = S->slot_of[p];
    if (s >= 0) {
        S->hits++;
        if (S->tail != s) { lru_unlink(S, s); lru_append(S, s); }
        return S->pool + s * m;
    }
    S->misses++;
    if (S->used < S->cap) {
        s = S->used++;
    } else {
        s = S->head;
        lru_unlink(S, s);
        if (S->slot_ex[s] >= 0) { /* (an empty slot is left only by a failed fill) */
            S->slot_of[S->slot_ex[s]] = -1;
            S->slot_ex[s] = -1;
            S->evictions++;
        }
    }
    if (load_row(S, p, s, S->pool + s * m) < 0) { /* the slot stays empty, first in line for reuse */
        S->prev[s] = -1;
        S->next[s] = S->head;
        if (S->head >= 0) S->prev[S->head] = s; else S->tail = s;
        S->head = s;
        return NULL;
    }
    S->slot_of[p] = s;
    S->slot_ex[s] = p;
    lru_append(S, s);
    return S->pool + s * m;
}

/* ------------------------------------------------------------------ Fig. 4 pieces */

/* Swap positions a and b: the columns of F, tau, pen, the entries of y, A, perm, pos, and the two
   entries of every pooled row (which are in position order). */
static void swap_pos(Solver *S, Py_ssize_t a, Py_ssize_t b)
{
    if (a == b) return;
    Py_ssize_t m = S->m;
    for (Py_ssize_t r = 0; r < S->k; r++) {
        double t;
        t = S->F[r * m + a]; S->F[r * m + a] = S->F[r * m + b]; S->F[r * m + b] = t;
        t = S->tau[r * m + a]; S->tau[r * m + a] = S->tau[r * m + b]; S->tau[r * m + b] = t;
        t = S->pen[r * m + a]; S->pen[r * m + a] = S->pen[r * m + b]; S->pen[r * m + b] = t;
    }
    int64_t ti;
    ti = S->y[a]; S->y[a] = S->y[b]; S->y[b] = ti;
    double ta = S->A[a]; S->A[a] = S->A[b]; S->A[b] = ta;
    ti = S->perm[a]; S->perm[a] = S->perm[b]; S->perm[b] = ti;
    S->pos[S->perm[a]] = a;
    S->pos[S->perm[b]] = b;
    if (S->lru) {
        double *pa = S->pool + a, *pb = S->pool + b;
        for (int64_t s = 0; s < S->used; s++, pa += m, pb += m) {
            double t = *pa;
            *pa = *pb;
            *pb = t;
        }
    }
    S->perm_identity = 0;
    S->swaps++;
}

/* One blocked pass over positions lo..hi-1: with a row (position order), F_r += dt_r K(x_p, .) for
   the classes that moved (Fig. 4's F update); then, with want_psi, psi_i = max_r F_ir -
   min_{r: tau_ir < delta} F_ir (eq. 32) and the first position of the largest psi (numpy's argmax)
   into *best_j, *best_v.  Blocks of BLK positions keep the running max / min in L1, so F and pen
   are read once.  With `pending`, the deferred terms dT_t K(x_{q_t}, .) of the rows rowp[0..P) are
   added first (the sync of A^c, fused with its scan). */
#define BLK 256
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* an AVX2 clone beside the baseline SSE2 one, chosen at load time (GCC function multiversioning);
   element-wise operations, so the result does not depend on the clone */
__attribute__((target_clones("default", "arch=x86-64-v3")))
#endif
static void pass_range(Solver *S, Py_ssize_t lo, Py_ssize_t hi, const double *row, const double *dt, Py_ssize_t P,
                       int want_psi, Py_ssize_t *best_j, double *best_v)
{
    Py_ssize_t m = S->m, k = S->k;
    double mx[BLK], mn[BLK];
    Py_ssize_t bj = lo;
    double bv = -INFINITY;
    for (Py_ssize_t b0 = lo; b0 < hi; b0 += BLK) {
        Py_ssize_t n = hi - b0 < BLK ? hi - b0 : BLK;
        for (Py_ssize_t r = 0; P > 0 && r < k; r++) {
            /* the pending terms of class r, four at a time: F + d0 K0 + d1 K1 + ... is evaluated left
               to right, the same sums as one term at a time, with a quarter of the loads of F */
            double *restrict fr = S->F + r * m + b0;
            Py_ssize_t t = 0;
            for (;;) {
                const double *kk[4];
                double dd[4];
                int c = 0;
                for (; t < P && c < 4; t++) {
                    double d = S->pend_dt[t * k + r];
                    if (d != 0.0) {
                        dd[c] = d;
                        kk[c++] = S->rowp[t] + b0;
                    }
                }
                if (c == 4) {
                    const double *restrict k0 = kk[0], *restrict k1 = kk[1], *restrict k2 = kk[2], *restrict k3 = kk[3];
                    double d0 = dd[0], d1 = dd[1], d2 = dd[2], d3 = dd[3];
                    for (Py_ssize_t j = 0; j < n; j++) fr[j] = fr[j] + d0 * k0[j] + d1 * k1[j] + d2 * k2[j] + d3 * k3[j];
                } else {
                    for (int u = 0; u < c; u++) {
                        const double *restrict ku = kk[u];
                        double du = dd[u];
                        for (Py_ssize_t j = 0; j < n; j++) fr[j] += du * ku[j];
                    }
                    break;
                }
            }
        }
        const double *restrict g = row != NULL ? row + b0 : NULL;
        for (Py_ssize_t r = 0; r < k; r++) {
            double *restrict fr = S->F + r * m + b0;
            const double *restrict pr = S->pen + r * m + b0;
            double d = g != NULL ? dt[r] : 0.0;
            if (!want_psi) {
                if (d != 0.0)
                    for (Py_ssize_t j = 0; j < n; j++) fr[j] += d * g[j];
            } else if (r == 0) {
                if (d != 0.0)
                    for (Py_ssize_t j = 0; j < n; j++) {
                        double f = fr[j] + d * g[j];
                        fr[j] = f;
                        mx[j] = f;
                        mn[j] = f + pr[j];
                    }
                else
                    for (Py_ssize_t j = 0; j < n; j++) {
                        mx[j] = fr[j];
                        mn[j] = fr[j] + pr[j];
                    }
            } else {
                if (d != 0.0)
                    for (Py_ssize_t j = 0; j < n; j++) {
                        double f = fr[j] + d * g[j], v;
                        fr[j] = f;
                        v = f + pr[j];
                        mx[j] = f > mx[j] ? f : mx[j];
                        mn[j] = v < mn[j] ? v : mn[j];
                    }
                else
                    for (Py_ssize_t j = 0; j < n; j++) {
                        double f = fr[j], v = f + pr[j];
                        mx[j] = f > mx[j] ? f : mx[j];
                        mn[j] = v < mn[j] ? v : mn[j];
                    }
            }
        }
        if (want_psi) { /* the block's largest psi in four lanes, then its first position if it beats bv */
            double l0 = -INFINITY, l1 = -INFINITY, l2 = -INFINITY, l3 = -INFINITY;
            Py_ssize_t j = 0;
            for (; j < n; j++) mx[j] -= mn[j];
            for (j = 0; j + 4 <= n; j += 4) {
                l0 = mx[j] > l0 ? mx[j] : l0;
                l1 = mx[j + 1] > l1 ? mx[j + 1] : l1;
                l2 = mx[j + 2] > l2 ? mx[j + 2] : l2;
                l3 = mx[j + 3] > l3 ? mx[j + 3] : l3;
            }
            for (; j < n; j++) l0 = mx[j] > l0 ? mx[j] : l0;
            l0 = l1 > l0 ? l1 : l0;
            l2 = l3 > l2 ? l3 : l2;
            l0 = l2 > l0 ? l2 : l0;
            if (l0 > bv) {
                for (j = 0; mx[j] != l0; j++) {}
                bv = l0;
                bj = b0 + j;
            }
        }
    }
    if (want_psi) {
        *best_j = bj;
        *best_v = bv;
    }
}

/* Apply the pending Δτ of A's updates to F on A^c (Fig. 4's update for i outside A, deferred):
   F_{:, i} += sum_t dT_t K(x_{q_t}, x_i), as numpy's F[:, A^c] += dT^T G; with want_scan, also the
   argmax of psi over A^c (one pass).  All pending rows are fetched first when the pool holds them
   at once (the rows fetched here are the most recent, so none is evicted while the others are
   fetched); otherwise one row at a time, then the scan. */
static int sync_rest(Solver *S, int want_scan, Py_ssize_t *best_j, double *best_v)
{
    Py_ssize_t k = S->k, m = S->m, nA = S->nA, P = S->n_pend;
    if (P > 0) S->syncs++;
    if (nA < m) {
        if (P > 0 && S->lru && S->cap >= P) {
            for (Py_ssize_t t = 0; t < P; t++)
                if ((S->rowp[t] = get_row(S, S->pend_list[t])) == NULL) return -1;
            pass_range(S, nA, m, NULL, NULL, P, want_scan, best_j, best_v);
        } else {
            for (Py_ssize_t t = 0; t < P; t++) {
                const double *row = get_row(S, S->pend_list[t]);
                if (row == NULL) return -1;
                pass_range(S, nA, m, row, S->pend_dt + t * k, 0, 0, NULL, NULL);
            }
            if (want_scan) pass_range(S, nA, m, NULL, NULL, 0, 1, best_j, best_v);
        }
        S->axpy_rest += P * (m - nA);
        if (want_scan) {
            S->scans++;
            S->psi_rest += m - nA;
        }
    }
    for (Py_ssize_t t = 0; t < P; t++) S->pend_at[S->pend_list[t]] = -1;
    S->n_pend = 0;
    return 0;
}

/* Solve the reduced problem (20)/(34) of the example at position q and update F, tau, pen; with
   want_psi, also the argmax of psi over A after the step (S->best_j, S->best_v, S->have_best).
   Returns 1 when tau_q moved, 0 when it did not, -1 on a Python error. */
static int update(Solver *S, Py_ssize_t q, int want_psi)
{
    Py_ssize_t m = S->m, k = S->k;
    double *D = S->D, *nu = S->nu, *nt = S->newt, *dt = S->dt;
    int64_t yp = S->y[q];
    double a = S->A[q];
    /* D_r = F_qr / A_q - tau_qr + delta_{r y_q} (eq. 34) */
    double sd = 0.0;
    for (Py_ssize_t r = 0; r < k; r++) D[r] = S->F[r * m + q] / a - S->tau[r * m + q];
    D[yp] += 1.0;
    for (Py_ssize_t r = 0; r < k; r++) sd += D[r];
    if (S->exact)
        solve_exact(S, D, nu);
    else /* Fig. 4: theta = mean(D) - 1/k, the image of theta_1 = min_r D_r; accuracy eps/2 */
        solve_fixed_point(S, D, (sd - 1.0) * (1.0 / (double)k), nu);
    int moved = 0;
    for (Py_ssize_t r = 0; r < k; r++) nt[r] = nu[r] - D[r]; /* tau = nu - D + 1_y (eq. 33) */
    nt[yp] += 1.0;
    for (Py_ssize_t r = 0; r < k; r++) {
        dt[r] = nt[r] - S->tau[r * m + q];
        moved |= dt[r] != 0.0;
    }
    if (!moved && !S->exact) { /* the fixed point stopped at once: take the exact step */
        solve_exact(S, D, nu);
        for (Py_ssize_t r = 0; r < k; r++) nt[r] = nu[r] - D[r];
        nt[yp] += 1.0;
        for (Py_ssize_t r = 0; r < k; r++) {
            dt[r] = nt[r] - S->tau[r * m + q];
            moved |= dt[r] != 0.0;
        }
    }
    if (!moved) return 0;
    int64_t p = S->perm[q];
    const double *row = get_row(S, p);
    if (row == NULL) return -1;
    Py_ssize_t nA = S->nA;
    /* tau_q and its pen first, so that the fused pass sees psi_q after the step */
    for (Py_ssize_t r = 0; r < k; r++) {
        S->tau[r * m + q] = nt[r];
        int allowed = r == yp ? nt[r] < 1.0 : nt[r] < 0.0;
        S->pen[r * m + q] = allowed ? 0.0 : INFINITY;
    }
    pass_range(S, 0, nA, row, dt, 0, want_psi, &S->best_j, &S->best_v);
    S->have_best = want_psi;
    S->axpy_active += nA;
    if (want_psi) S->psi_active += nA;
    if (nA < m) {
        if (S->lazy) {
            int64_t t = S->pend_at[p];
            if (t < 0) {
                t = S->n_pend++;
                S->pend_at[p] = t;
                S->pend_list[t] = p;
                memcpy(S->pend_dt + t * k, dt, (size_t)k * sizeof(double));
            } else {
                for (Py_ssize_t r = 0; r < k; r++) S->pend_dt[t * k + r] = S->pend_dt[t * k + r] + dt[r];
            }
        } else {
            pass_range(S, nA, m, row, dt, 0, 0, NULL, NULL);
            S->axpy_rest += m - nA;
        }
    }
    S->updates++;
    return 1;
}

static int tau_is_zero(Solver *S, Py_ssize_t q)
{
    for (Py_ssize_t r = 0; r < S->k; r++)
        if (S->tau[r * S->m + q] != 0.0) return 0;
    return 1;
}

/* ------------------------------------------------------------------ Python methods */

#define CHECK_SIGNALS_EVERY 2048

PyDoc_STRVAR(round_doc,
"run_round(threshold, max_updates) -> stalled\n\n"
"One cooling round of Fig. 4 with KKT selection: pick the example of largest psi in the active set,\n"
"or, when every psi there is <= threshold (= beta eps_t), the worst violator of the rest, which\n"
"joins the active set; solve its reduced problem; an example whose tau returns to 0 leaves the\n"
"active set.  Ends when no psi exceeds the threshold, after max_updates updates in all, or when\n"
"the selected example does not move (returns True: stalled).  F on the rest is synced at the end.");

static PyObject *Solver_run_round(Solver *S, PyObject *args)
{
    double thr;
    long long max_updates;
    if (!PyArg_ParseTuple(args, "dL", &thr, &max_updates)) return NULL;
    Py_ssize_t m = S->m;
    int stalled = 0;
    long long since_check = 0;
    S->have_best = 0;
    while (S->updates < max_updates) {
        Py_ssize_t q = -1;
        if (S->nA > 0) {
            if (!S->have_best) {
                pass_range(S, 0, S->nA, NULL, NULL, 0, 1, &S->best_j, &S->best_v);
                S->psi_active += S->nA;
                S->have_best = 1;
            }
            if (S->best_v > thr) q = S->best_j;
        }
        if (q < 0 && S->nA < m) { /* A exhausted: bring A^c up to date, move its worst violator into A */
            Py_ssize_t j;
            double v;
            if (sync_rest(S, 1, &j, &v) < 0) return NULL;
            if (!(v > thr)) break;
            swap_pos(S, j, S->nA);
            q = S->nA;
            S->nA++;
        }
        if (q < 0) break;
        int res = update(S, q, 1);
        if (res < 0) return NULL;
        if (res == 0) { stalled = 1; break; }
        if (S->active && tau_is_zero(S, q)) { /* tau_q = 0: q leaves A */
            if (sync_rest(S, 0, NULL, NULL) < 0) return NULL;
            swap_pos(S, q, S->nA - 1);
            S->nA--;
            S->have_best = 0;
        }
        if (++since_check >= CHECK_SIGNALS_EVERY) {
            since_check = 0;
            if (PyErr_CheckSignals() < 0) return NULL;
        }
    }
    if (sync_rest(S, 0, NULL, NULL) < 0) return NULL;
    S->have_best = 0;
    return PyBool_FromLong(stalled);
}

PyDoc_STRVAR(sweep_doc,
"sweep() -> None\n\n"
"One sweep of the baseline without KKT selection: solve the reduced problem of every example in\n"
"position order (Sec. 7, version 1).");

static PyObject *Solver_sweep(Solver *S, PyObject *Py_UNUSED(ignored))
{
    for (Py_ssize_t q = 0; q < S->m; q++) {
        if (update(S, q, 0) < 0) return NULL;
        if ((q & (CHECK_SIGNALS_EVERY - 1)) == 0 && PyErr_CheckSignals() < 0) return NULL;
    }
    if (sync_rest(S, 0, NULL, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Solver_counters(Solver *S, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:n,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "n_active", S->nA, "updates",
                         S->updates, "cache_hits", S->hits, "kernel_rows_computed", S->misses, "cache_evictions",
                         S->evictions, "syncs", S->syncs, "fixed_point_steps", S->fp_steps, "swaps", S->swaps,
                         "scans", S->scans, "psi_active", S->psi_active, "psi_rest", S->psi_rest, "axpy_active",
                         S->axpy_active, "axpy_rest", S->axpy_rest);
}

static PyMethodDef Solver_methods[] = {
    {"run_round", (PyCFunction)Solver_run_round, METH_VARARGS, round_doc},
    {"sweep", (PyCFunction)Solver_sweep, METH_NOARGS, sweep_doc},
    {"counters", (PyCFunction)Solver_counters, METH_NOARGS, "counters() -> dict of the solver's counters"},
    {NULL, NULL, 0, NULL},
};

static void Solver_dealloc(Solver *S)
{
    for (int i = 0; i < S->n_views; i++) PyBuffer_Release(&S->views[i]);
    Py_XDECREF(S->fill);
    free(S->slot_of); free(S->slot_ex); free(S->prev); free(S->next);
    free(S->pend_list); free(S->pend_at); free(S->pend_dt);
    free(S->row_tmp); free((void *)S->rowp); free(S->D); free(S->nu); free(S->newt); free(S->dt); free(S->sorted);
    Py_TYPE(S)->tp_free((PyObject *)S);
}

/* Acquire a C-contiguous buffer of `count` 8-byte items of kind 'd' (double) or 'i' (int64). */
static void *take(Solver *S, PyObject *obj, const char *name, char kind, Py_ssize_t count, int writable)
{
    Py_buffer *v = &S->views[S->n_views];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, v, flags) < 0) return NULL;
    S->n_views++;
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<') f++;
    int ok = v->itemsize == 8 && f[0] != '\0' && f[1] == '\0' &&
             (kind == 'd' ? f[0] == 'd' : (f[0] == 'q' || f[0] == 'l'));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous %s array; got format %s, itemsize %zd", name,
                     kind == 'd' ? "float64" : "int64", v->format ? v->format : "B", v->itemsize);
        return NULL;
    }
    if (v->len != count * 8) {
        PyErr_Format(PyExc_ValueError, "%s must have %zd items; got %zd", name, count, v->len / 8);
        return NULL;
    }
    return v->buf;
}

static Py_ssize_t n_items(PyObject *obj)
{
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS) < 0) return -1;
    Py_ssize_t n = v.itemsize > 0 ? v.len / v.itemsize : 0;
    PyBuffer_Release(&v);
    return n;
}

static PyObject *Solver_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"F", "tau", "pen", "y", "A", "perm", "pos", "pool", "lru", "fill", "gram", "n_active",
                             "fp_tol", "fp_max_iter", "exact", "active", NULL};
    PyObject *oF, *otau, *open_, *oy, *oA, *operm, *opos, *opool, *fill, *ogram;
    int lru, exact, active;
    Py_ssize_t nA;
    double fp_tol;
    long fp_max_iter;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOOOpOOndlpp", kwlist, &oF, &otau, &open_, &oy, &oA, &operm,
                                     &opos, &opool, &lru, &fill, &ogram, &nA, &fp_tol, &fp_max_iter, &exact, &active))
        return NULL;
    Solver *S = (Solver *)type->tp_alloc(type, 0);
    if (S == NULL) return NULL;
    S->head = S->tail = -1;
    Py_ssize_t m = n_items(oy), mk = n_items(oF), pool_items = n_items(opool);
    if (m < 0 || mk < 0 || pool_items < 0) goto fail;
    Py_ssize_t k = m > 0 ? mk / m : 0;
    if (m < 1 || k < 2) {
        PyErr_Format(PyExc_ValueError, "need m >= 1 examples and k >= 2 classes; got m = %zd, k = %zd", m, k);
        goto fail;
    }
    Py_ssize_t cap = pool_items / m;
    if (cap < 1 || (!lru && cap != 1)) {
        PyErr_Format(PyExc_ValueError, "pool must hold >= 1 rows of %zd (exactly 1 without the LRU cache); got %zd",
                     m, cap);
        goto fail;
    }
    if (nA < 0 || nA > m || fp_max_iter < 1 || !(fp_tol >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "need 0 <= n_active <= m, fp_max_iter >= 1, fp_tol >= 0");
        goto fail;
    }
    S->m = m;
    S->k = k;
    S->cap = cap;
    if (!(S->F = take(S, oF, "F", 'd', m * k, 1)) || !(S->tau = take(S, otau, "tau", 'd', m * k, 1)) ||
        !(S->pen = take(S, open_, "pen", 'd', m * k, 1)) || !(S->y = take(S, oy, "y", 'i', m, 1)) ||
        !(S->A = take(S, oA, "A", 'd', m, 1)) || !(S->perm = take(S, operm, "perm", 'i', m, 1)) ||
        !(S->pos = take(S, opos, "pos", 'i', m, 1)) || !(S->pool = take(S, opool, "pool", 'd', cap * m, 1)))
        goto fail;
    if (ogram != Py_None) {
        if (!(S->gram = take(S, ogram, "gram", 'd', m * m, 0))) goto fail;
    } else if (!PyCallable_Check(fill)) {
        PyErr_SetString(PyExc_TypeError, "give gram, or a callable fill(example, slot)");
        goto fail;
    }
    S->perm_identity = 1;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (S->y[i] < 0 || S->y[i] >= k || S->perm[i] < 0 || S->perm[i] >= m || S->pos[S->perm[i]] != i) {
            PyErr_SetString(PyExc_ValueError, "labels must lie in 0..k-1 and pos must invert perm");
            goto fail;
        }
        if (S->perm[i] != i) S->perm_identity = 0;
    }
    Py_INCREF(fill);
    S->fill = fill;
    S->lru = lru;
    S->lazy = lru; /* defer F on A^c only when the rows can be served from the pool */
    S->nA = nA;
    S->fp_tol = fp_tol;
    S->fp_max_iter = fp_max_iter;
    S->exact = exact;
    S->active = active;
    size_t i8 = sizeof(int64_t), d8 = sizeof(double);
    S->slot_of = malloc((size_t)m * i8);
    S->slot_ex = malloc((size_t)cap * i8);
    S->prev = malloc((size_t)cap * i8);
    S->next = malloc((size_t)cap * i8);
    S->pend_list = malloc((size_t)m * i8);
    S->pend_at = malloc((size_t)m * i8);
    S->pend_dt = malloc((size_t)(m * k) * d8);
    S->row_tmp = malloc((size_t)m * d8);
    S->rowp = malloc((size_t)m * sizeof(double *));
    S->D = malloc((size_t)k * d8);
    S->nu = malloc((size_t)k * d8);
    S->newt = malloc((size_t)k * d8);
    S->dt = malloc((size_t)k * d8);
    S->sorted = malloc((size_t)k * d8);
    if (!S->slot_of || !S->slot_ex || !S->prev || !S->next || !S->pend_list || !S->pend_at || !S->pend_dt ||
        !S->row_tmp || !S->rowp || !S->D || !S->nu || !S->newt || !S->dt || !S->sorted) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < m; i++) S->slot_of[i] = S->pend_at[i] = -1;
    for (Py_ssize_t s = 0; s < cap; s++) S->slot_ex[s] = S->prev[s] = S->next[s] = -1;
    return (PyObject *)S;
fail:
    Py_DECREF(S);
    return NULL;
}

PyDoc_STRVAR(Solver_doc,
"Solver(F, tau, pen, y, A, perm, pos, pool, lru, fill, gram, n_active, fp_tol, fp_max_iter, exact, active)\n\n"
"State of Fig. 4 over arrays owned by the caller (see the file header for their layout), updated\n"
"in place by run_round() and sweep().  pool: (cap, m) rows (cap = 1 without the LRU cache); rows\n"
"come from gram (m x m, example order) when it is not None, else from fill(example, slot), which\n"
"must write K(x_example, .) in example order into pool[slot].");

static PyTypeObject SolverType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpmodels.baselines.crammer_singer._core.Solver",
    .tp_basicsize = sizeof(Solver),
    .tp_dealloc = (destructor)Solver_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Solver_doc,
    .tp_methods = Solver_methods,
    .tp_new = Solver_new,
};

static PyObject *py_theta_exact(PyObject *self, PyObject *arg)
{
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (v.itemsize != 8 || v.len < 8) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "D must be a non-empty float64 vector");
        return NULL;
    }
    Py_ssize_t k = v.len / 8;
    double *d = malloc((size_t)k * sizeof(double));
    if (!d) { PyBuffer_Release(&v); return PyErr_NoMemory(); }
    double th = theta_exact((const double *)v.buf, d, k);
    free(d);
    PyBuffer_Release(&v);
    return PyFloat_FromDouble(th);
}

static PyMethodDef module_methods[] = {
    {"theta_exact", py_theta_exact, METH_O, "theta_exact(D) -> theta* of eq. (37) by sorting (eq. 42)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_core",
    "Compiled inner loop of the Crammer-Singer solver (Fig. 3, Fig. 4, Sec. 7); see crammer_singer.py.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&SolverType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&moduledef);
    if (mod == NULL) return NULL;
    Py_INCREF(&SolverType);
    if (PyModule_AddObject(mod, "Solver", (PyObject *)&SolverType) < 0) {
        Py_DECREF(&SolverType);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
