"""Every example of the gallery runs, in its quick mode, and draws a figure."""

import runpy
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("plot_*.py"))


def test_the_gallery_is_found():
    assert len(EXAMPLES) >= 7


# the quick mode cuts max_iter: a smoke run of each example, not converged fits
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs_and_draws(path, monkeypatch, tmp_path):
    monkeypatch.setenv("SKLEARN_ADM_EXAMPLES_QUICK", "1")
    monkeypatch.chdir(tmp_path)  # anything an example writes stays out of the tree
    plt.close("all")
    runpy.run_path(str(path), run_name="__main__")
    assert plt.get_fignums(), f"{path.name} drew no figure"
    plt.close("all")
