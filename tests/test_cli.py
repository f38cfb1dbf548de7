"""The command line: ``python -m sklearn_adm score FILE``."""

import numpy as np
import pytest

from sklearn_adm.__main__ import main
from sklearn_adm.metrics import distance_correlation_one_vs_rest


@pytest.fixture
def data(rng):
    x = rng.uniform(-1, 1, size=300)
    return np.c_[x, x**2, rng.uniform(size=300)]


@pytest.mark.parametrize("header", [False, True])
def test_score_csv_prints_a_table_and_the_mean(tmp_path, data, capsys, header):
    path = tmp_path / "features.csv"
    np.savetxt(path, data, delimiter=",", header="a,b,c" if header else "", comments="")
    assert main(["score", str(path)]) == 0
    out = capsys.readouterr().out
    expected = distance_correlation_one_vs_rest(data)
    assert f"{expected[1]:.4f}" in out
    assert f"mean {expected.mean():>10.4f}" in " ".join(out.split("\n")[-2:])


def test_score_npy_with_options(tmp_path, data, capsys):
    path = tmp_path / "features.npy"
    np.save(path, data)
    assert main(["score", str(path), "--metric", "pearson", "--max-samples", "0"]) == 0
    assert "pearson" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.npy", None, "cannot read"),
        ("table.txt", "1,2\n3,4\n", "expected a .npy or .csv file"),
        ("words.csv", "a,b\nc,d\ne,f\n", "cannot read"),
        ("one_column.csv", "1\n2\n3\n", "1 feature"),
    ],
)
def test_unreadable_files_get_a_clear_message(tmp_path, capsys, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    assert main(["score", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_score_names_columns_by_the_header_and_tests_them(tmp_path, data, capsys):
    path = tmp_path / "features.csv"
    np.savetxt(path, data, delimiter=",", header="angle,height,noise", comments="")
    assert main(["score", str(path), "--test", "--permutations", "19"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["feature", "dcor", "floor", "p-value"]
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in lines[1:4]}
    assert list(rows) == ["angle", "height", "noise"]
    assert rows["angle"][2] == rows["height"][2] == 0.05  # 1 / (19 + 1): beyond every shuffle
    assert rows["noise"][2] > 0.05 and rows["noise"][1] > 0  # the floor of independent columns
