"""Synthetic data: known independent factors, and stand-ins for sentence embeddings."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "FACTOR_IMAGE_FACTORS",
    "make_embedding_like",
    "make_factor_images",
    "make_nonlinear_mixture",
    "make_pca_vs_pica",
]


def make_pca_vs_pica(n_samples=10_000, *, random_state=None):
    r"""The paper's Example 1: two independent factors, three uncorrelated observations.

    With :math:`v_1, v_2 \sim U(-\sqrt 3, \sqrt 3)` independent (unit variance),
    :math:`x = [5 v_1,\ 3 \cos(2\pi v_1 / \sqrt 3),\ v_2]`. The observations are uncorrelated
    with variances 25, 4.5 and 1, so PCA with two components keeps :math:`x_1, x_2`, which are
    both functions of :math:`v_1`; PICA keeps :math:`x_1, x_3`, one per factor.

    Parameters
    ----------
    n_samples : int, default=10_000
        Number of rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
        The observations.
    factors : ndarray of shape (n_samples, 2)
        The latent factors :math:`v_1, v_2`.

    Examples
    --------
    >>> from sklearn_adm.datasets import make_pca_vs_pica
    >>> X, factors = make_pca_vs_pica(100_000, random_state=0)
    >>> X.var(axis=0).round(1)
    array([25. ,  4.5,  1. ])
    """
    rng = check_random_state(random_state)
    factors = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(n_samples, 2))
    v1, v2 = factors.T
    X = np.column_stack([5 * v1, 3 * np.cos(2 * np.pi * v1 / np.sqrt(3)), v2])
    return X, factors


def make_nonlinear_mixture(n_samples=5_000, *, random_state=None):
    r"""Two independent uniform factors mixed nonlinearly into five features.

    With :math:`s_1, s_2 \sim U(-1, 1)` independent,
    :math:`x = [s_1 + s_2,\ s_1 s_2 + s_1/2,\ \tanh(2 s_1) - s_2/2,\ \sin(2 s_2) + 0.3 s_1,\
    s_1^2 - s_2]`: every feature but the products mixes both factors, so no feature alone is
    a factor.

    Parameters
    ----------
    n_samples : int, default=5_000
        Number of rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    X : ndarray of shape (n_samples, 5)
        The observations.
    factors : ndarray of shape (n_samples, 2)
        The factors :math:`s_1, s_2`.

    Examples
    --------
    >>> from sklearn_adm.datasets import make_nonlinear_mixture
    >>> X, factors = make_nonlinear_mixture(100, random_state=0)
    >>> X.shape, factors.shape
    ((100, 5), (100, 2))
    """
    rng = check_random_state(random_state)
    factors = rng.uniform(-1, 1, size=(n_samples, 2))
    s1, s2 = factors.T
    X = np.column_stack(
        [
            s1 + s2,
            s1 * s2 + 0.5 * s1,
            np.tanh(2 * s1) - 0.5 * s2,
            np.sin(2 * s2) + 0.3 * s1,
            s1**2 - s2,
        ]
    )
    return X, factors


def make_embedding_like(n_samples=3_000, n_features=384, *, n_clusters=40, random_state=None):
    """Rows of the character of sentence embeddings: clustered, heavy-tailed, unit-norm.

    Each row is a cluster centre plus independent Student-t noise (5 degrees of freedom) along
    directions of slowly decaying scale (the ``k``-th has standard deviation ``k^(-1/2)``),
    turned by a random rotation, shifted by a common offset and scaled to unit norm, as
    MiniLM's embeddings are. The clusters make the principal components dependent (their
    conditional spread differs from cluster to cluster); the labels name the clusters.

    Parameters
    ----------
    n_samples : int, default=3_000
        Number of rows.
    n_features : int, default=384
        Number of features.
    n_clusters : int, default=40
        Number of clusters, of random sizes.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The rows, each of unit Euclidean norm.
    labels : ndarray of shape (n_samples,)
        The cluster of each row.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.datasets import make_embedding_like
    >>> X, labels = make_embedding_like(500, 64, n_clusters=5, random_state=0)
    >>> X.shape, np.allclose(np.linalg.norm(X, axis=1), 1), len(np.unique(labels))
    ((500, 64), True, 5)
    """
    rng = check_random_state(random_state)
    scales = np.arange(1, n_features + 1) ** -0.5
    labels = rng.choice(n_clusters, size=n_samples, p=rng.dirichlet(np.full(n_clusters, 2.0)))
    centres = 1.5 * rng.standard_normal((n_clusters, n_features)) * scales
    noise = rng.standard_t(5, size=(n_samples, n_features)) * scales
    rotation = np.linalg.qr(rng.standard_normal((n_features, n_features)))[0]
    X = (centres[labels] + noise) @ rotation.T + 2.0 * rotation[:, 0]
    return X / np.linalg.norm(X, axis=1, keepdims=True), labels


#: the factors of :func:`make_factor_images`, in the order of its label columns, and their values
FACTOR_IMAGE_FACTORS = {
    "shape": ("square", "disc", "triangle", "cross"),
    "colour": ("red", "green", "blue", "yellow"),
    "texture": ("solid", "horizontal stripes", "vertical stripes", "checks"),
    "size": ("small", "medium", "large", "huge"),
}
_FACTOR_RGB = np.array([[1.0, 0.15, 0.15], [0.15, 0.9, 0.15], [0.25, 0.35, 1.0], [1.0, 0.9, 0.1]])
_FACTOR_RADII = np.array([5.0, 7.0, 9.0, 11.0])  # at image_size=32


def make_factor_images(n_samples=10_000, *, image_size=32, random_state=None):
    """Small RGB images of one object, drawn from four independent factors.

    A Clevr-4-like set made in code (the paper's Sec. 6.2 trains on Clevr-4): each image shows
    one object on a dark noisy background, and its shape, colour, texture and size are drawn
    uniformly and independently, four values each (see ``FACTOR_IMAGE_FACTORS``). Knowing one
    factor says nothing about the others, so a representation that keeps what it was not
    trained on can be measured factor by factor. The object's position and brightness vary
    at random too.

    Parameters
    ----------
    n_samples : int, default=10_000
        Number of images.
    image_size : int, default=32
        Height and width in pixels, at least 16.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    images : ndarray of shape (n_samples, 3, image_size, image_size)
        float32 RGB values in [0, 1], channels first as PyTorch's convolutions expect.
    factors : ndarray of shape (n_samples, 4)
        The shape, colour, texture and size of each image, each in {0, 1, 2, 3}.

    Examples
    --------
    >>> from sklearn_adm.datasets import FACTOR_IMAGE_FACTORS, make_factor_images
    >>> images, factors = make_factor_images(100, random_state=0)
    >>> images.shape, images.dtype, list(FACTOR_IMAGE_FACTORS)
    ((100, 3, 32, 32), dtype('float32'), ['shape', 'colour', 'texture', 'size'])
    >>> float(images.min()) >= 0 and float(images.max()) <= 1
    True
    """
    if image_size < 16:
        raise ValueError(f"image_size must be at least 16, got {image_size}.")
    rng = check_random_state(random_state)
    factors = rng.randint(4, size=(n_samples, 4))
    shape, colour, texture, size = factors.T
    scale = image_size / 32
    radius = scale * (_FACTOR_RADII[size] + rng.uniform(-0.5, 0.5, size=n_samples))
    centre = rng.uniform(radius + 1, image_size - radius - 1, size=(2, n_samples))
    y, x = np.mgrid[:image_size, :image_size]
    dx = x - centre[0][:, None, None]
    dy = y - centre[1][:, None, None]
    r = radius[:, None, None]
    ax, ay = np.abs(dx), np.abs(dy)
    inside = np.select(
        [shape[:, None, None] == s for s in range(3)],
        [
            np.maximum(ax, ay) <= 0.85 * r,  # square
            dx**2 + dy**2 <= r**2,  # disc
            (dy >= -r) & (dy <= 0.8 * r) & (ax <= 0.6 * (dy + r)),  # triangle, apex up
        ],
        (np.minimum(ax, ay) <= r / 3) & (np.maximum(ax, ay) <= r),  # cross
    )
    stripes = [(y // 2) % 2, (x // 2) % 2, (x // 2 + y // 2) % 2]  # 2-pixel bands, checks
    pattern = np.stack([np.ones_like(x, dtype=float)] + [0.4 + 0.6 * s for s in stripes])
    brightness = rng.uniform(0.8, 1.0, size=(n_samples, 1, 1))
    paint = _FACTOR_RGB[colour][:, :, None, None] * (pattern[texture] * brightness)[:, None]
    background = 0.1 + 0.05 * rng.standard_normal((n_samples, 3, image_size, image_size))
    images = np.where(inside[:, None], paint, background).clip(0.0, 1.0)
    return images.astype(np.float32), factors
