"""The synthetic data sets draw what their docstrings say."""

import numpy as np
import pytest

from sklearn_adm.datasets import FACTOR_IMAGE_FACTORS, make_factor_images


def object_pixels(images):
    """Pixels brighter than the background (0.1 + noise of 0.05) in some channel."""
    return images.max(axis=1) > 0.35


def test_factor_images_draw_independent_uniform_factors():
    _, factors = make_factor_images(4000, random_state=0)
    assert factors.shape == (4000, len(FACTOR_IMAGE_FACTORS))
    for j in range(4):
        np.testing.assert_allclose(np.bincount(factors[:, j]) / 4000, 0.25, atol=0.03)
    joint = np.bincount(4 * factors[:, 0] + factors[:, 1], minlength=16) / 4000
    np.testing.assert_allclose(joint, 1 / 16, atol=0.02)  # shape and colour independent


def test_factor_images_show_their_factors():
    images, factors = make_factor_images(800, random_state=1)
    inside = object_pixels(images)
    area = inside.sum(axis=(1, 2))
    mean_area = [area[factors[:, 3] == size].mean() for size in range(4)]
    assert np.all(np.diff(mean_area) > 20)  # larger size, larger object
    red = factors[:, 1] == 0
    colour = (images * inside[:, None]).sum(axis=(2, 3)) / area[:, None]
    assert np.all(colour[red, 0] > colour[red, 1] + 0.3)  # red objects are red
    solid = factors[:, 2] == 0
    brightest = images.max(axis=1)
    spread = np.array([b[m].std() for b, m in zip(brightest, inside, strict=True)])
    assert spread[solid].mean() < 0.5 * spread[~solid].mean()  # textures vary, solid does not


def test_factor_images_are_seeded_and_checked():
    first, _ = make_factor_images(10, random_state=3)
    second, _ = make_factor_images(10, random_state=3)
    np.testing.assert_array_equal(first, second)
    assert make_factor_images(5, image_size=20, random_state=0)[0].shape == (5, 3, 20, 20)
    with pytest.raises(ValueError, match="image_size must be at least 16"):
        make_factor_images(5, image_size=8)
