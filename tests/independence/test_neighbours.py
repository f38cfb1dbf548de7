"""The nearest-neighbour predictions of the learned test: a local average whose number of
neighbours is learned on the training rows."""

import numpy as np
import pytest

from sklearn_adm.independence._neighbours import neighbour_predictions

pytestmark = pytest.mark.numerics


def _draw(rng, n, relation, noise):
    x = rng.uniform(-1, 1, size=(n, 1))
    return x, relation(x) + noise * rng.normal(size=(n, 1))


@pytest.mark.parametrize(
    ("relation", "noise", "neighbours", "correlation"),
    [
        # sixteen periods over 150 rows: only a few neighbours share a phase
        (lambda x: np.sin(16 * np.pi * x), 0.5, (2, 5), 0.75),
        # a smooth relation through heavy noise: the more neighbours the better
        (lambda x: x, 2.0, (21, 55), 0.2),
    ],
)
def test_neighbours_are_learned_from_the_training_rows(
    rng, relation, noise, neighbours, correlation
):
    x_train, y_train = _draw(rng, 150, relation, noise)
    x_test = rng.uniform(-1, 1, size=(2000, 1))
    predictions, k = neighbour_predictions(x_train, y_train, x_test)
    assert predictions.shape == (2000, 1)
    assert neighbours[0] <= k[0] <= neighbours[1]
    truth = relation(x_test)[:, 0]
    assert np.corrcoef(predictions[:, 0], truth)[0, 1] > correlation


def test_each_target_column_gets_its_own_number_of_neighbours(rng):
    x = rng.uniform(-1, 1, size=(300, 1))
    targets = np.c_[np.sin(16 * np.pi * x), x + 2 * rng.normal(size=(300, 1))]
    _, k = neighbour_predictions(x, targets, x[:10])
    assert k[0] < 8 <= k[1]


def test_a_training_row_is_not_its_own_neighbour(rng):
    """Leave-one-out: were each row its own neighbour, pure noise would look best predicted
    by the fewest neighbours (k = 2 puts half the weight on the row itself), every time."""
    chosen = []
    for seed in range(20):
        noise = np.random.default_rng(seed)
        _, k = neighbour_predictions(
            noise.normal(size=(100, 2)), noise.normal(size=(100, 1)), np.zeros((1, 2))
        )
        chosen.append(k[0])
    assert np.mean(np.array(chosen) == 2) < 0.5


def test_scale_of_the_features_does_not_matter(rng):
    x, y = _draw(rng, 100, lambda x: np.sin(4 * np.pi * x), 0.3)
    features = np.c_[x, rng.normal(size=(100, 1))]
    test = rng.uniform(-1, 1, size=(50, 2))
    a, _ = neighbour_predictions(features, y, test)
    b, _ = neighbour_predictions(features * [1e6, 1e-3], y, test * [1e6, 1e-3])
    np.testing.assert_allclose(a, b)
