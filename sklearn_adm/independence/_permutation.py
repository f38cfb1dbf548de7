"""The permutation engine every test of :class:`~sklearn_adm.DependenceScorer` runs on: the
orders of the rows (among all rows, within groups, the held-out rows apart), p-values with
the observed data counted as one permutation, the largest of several standardised
statistics, and tests that may stop early: one statistic's when enough permutations reach
it, several statistics' after a first stage.

A test gives the engine ``statistics(orders)``, which returns the observed statistics
``(k,)`` and those with Y's rows (or each column) in each of ``orders`` ``(len(orders), k)``;
the permutations' mean is the estimator's floor, the value independent data of the same
marginals and size get."""

import math

import numpy as np

#: permutations of a test that stops early where their p-value is high (``early_stop``)
FIRST_STAGE = 39
#: permutations drawn at a time by :func:`inverse_permutations`
PERMUTATION_BLOCK = 16


def group_permutations(n, groups, copies, rng):
    """``(copies, n)`` orders of ``n`` rows, each shuffling rows only within their group
    (``groups`` None: among all rows): row ``orders[c, i]`` takes the place of row ``i``."""
    keys = rng.random_sample((copies, n))
    if groups is None:
        return np.argsort(keys, axis=1)
    # sort by group, then at random within it: the k-th place of a group gets a random row
    # of the same group
    by_group = np.argsort(groups, kind="stable")
    within = np.argsort(groups[by_group] + keys, axis=1)  # labels are integers: keys < 1
    orders = np.empty_like(within)
    np.put_along_axis(orders, np.broadcast_to(by_group, within.shape), by_group[within], axis=1)
    return orders


def inverse_permutations(n, n_permutations, rng):
    """Blocks of at most ``PERMUTATION_BLOCK`` orders ``(block, n)``, each the inverse of
    ``rng.permutation(n)``, drawn as they are read: the permutations of dcor's test for the
    same seed, in memory ``O(n)`` at any number of permutations."""
    rows = np.arange(n)
    for start in range(0, n_permutations, PERMUTATION_BLOCK):
        block = np.empty((min(PERMUTATION_BLOCK, n_permutations - start), n), dtype=np.intp)
        for inverse in block:
            inverse[rng.permutation(n)] = rows  # argsort's result, in O(n)
        yield block


def held_out_apart(groups, held_out, n_permutations, rng):
    """``(n_permutations, n)`` orders of the rows, each shuffling rows only within their
    group (``groups``, a label per row) and, within it, the ``held_out`` rows (indices) only
    among themselves: statistics of a critic that trained on the other rows are permuted
    alike with statistics of all rows."""
    in_held_out = np.zeros(len(groups), dtype=np.int64)
    in_held_out[held_out] = 1
    parts = np.unique(np.c_[groups, in_held_out], axis=0, return_inverse=True)[1]
    return group_permutations(len(groups), parts.reshape(-1), n_permutations, rng)


def shuffle_columns(Z, rng):
    """Each column of ``Z`` permuted on its own."""
    return np.take_along_axis(Z, rng.random_sample(Z.shape).argsort(axis=0), axis=0)


def p_values(observed, permuted):
    """Share of the permutations, the observed data counted as one, whose statistic reaches
    the observed one (with a tolerance for rounding): at least ``1 / (n_permutations + 1)``."""
    return (1 + (permuted >= observed - 1e-12).sum(axis=0)) / (1 + len(permuted))


def largest_standardized(statistics):
    """Per row of ``statistics`` ``(1 + n_permutations, n_columns)`` (the observed data
    first), the largest column after each column is standardised over all the rows.

    Columns can have very different nulls: a column of ``Y`` that the other columns of ``Y``
    predict keeps its high correlation under every permutation, and a plain maximum would be
    that column's whatever ``X`` does (hyppo's two parabolas in five dimensions: power 0 with
    the plain maximum). The standardisation treats all rows alike, so the rows stay
    exchangeable under the null and the test exact."""
    centred = statistics - statistics.mean(axis=0)
    scale = centred.std(axis=0)
    return np.where(scale > 0, centred / np.where(scale > 0, scale, 1.0), 0.0).max(axis=1)


def largest_p_value(observed, permuted):
    """The p-value of the largest of the standardised statistics, observed ``(k,)`` against
    permuted ``(n_permutations, k)`` (:func:`largest_standardized`)."""
    strongest = largest_standardized(np.vstack([observed, permuted]))
    return float(p_values(strongest[0], strongest[1:]))


def staged_test(statistics, p_value, orders, n_permutations, early_stop=None):
    """Observed statistics, permuted ones and the p-value ``p_value(observed, permuted)`` of
    the permutations ``orders`` ``(n_permutations, n)``, read in two stages.

    ``early_stop``: a p-value above which the test stops after its first ``FIRST_STAGE``
    permutations and returns that stage's p-value (None: never). The p-value stays valid:
    it is at most ``alpha`` only where the first stage's is, for any ``alpha``
    (design/causal-discovery). The permutations are the same draws either way, so a test
    that does not stop returns the p-value of one that never would."""
    first = n_permutations if early_stop is None else FIRST_STAGE
    observed, permuted = statistics(orders[:first])
    p = p_value(observed, permuted)
    if first < len(orders) and p <= early_stop:
        permuted = np.vstack([permuted, statistics(orders[first:])[1]])
        p = p_value(observed, permuted)
    return observed, permuted, p


def sequential_test(statistics, orders, n_permutations, early_stop=None):
    """The observed statistic ``(1,)``, the permuted ones ``(drawn, 1)`` and the p-value of a
    test of one statistic on the permutations ``orders`` (an array, or blocks of one from
    :func:`inverse_permutations`), read a block at a time.

    ``early_stop``: the test stops at the ``h``-th permuted statistic that reaches the
    observed one, ``h`` the count that puts the p-value of ``FIRST_STAGE`` permutations
    above ``early_stop`` (None: never stops), and its p-value is ``h / L`` after ``L``
    permutations: Besag & Clifford's (1991) sequential p-value, valid at every alpha. A test
    that reaches ``n_permutations`` returns the full test's p-value. A stopped test had at
    least ``h`` of the full test's permutations reach its statistic: at every alpha below
    ``h / n_permutations`` it decides as the full test, on the same draws."""
    needed = math.inf if early_stop is None else max(1, math.floor(early_stop * (FIRST_STAGE + 1)))
    parts = (
        (orders[:FIRST_STAGE], orders[FIRST_STAGE:])
        if isinstance(orders, np.ndarray)
        else ([block] for block in orders)
    )
    drawn, reached = [], 0
    for part in parts:
        if len(part) == 0:
            continue
        observed, permuted = statistics(part)
        drawn.append(permuted)
        reaching = reached + np.cumsum(permuted[:, 0] >= observed[0] - 1e-12)
        if reaching[-1] >= needed:
            stop = sum(map(len, drawn)) - len(permuted) + int(np.argmax(reaching >= needed)) + 1
            return observed, np.vstack(drawn)[:stop], needed / stop
        reached = reaching[-1]
    permuted = np.vstack(drawn)
    return observed, permuted, float(p_values(observed[0], permuted[:, 0]))
