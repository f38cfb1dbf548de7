"""The command line: ``python -m sklearn_adm score FILE``."""

import sys

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
        ("table.txt", "1,2\n3,4\n", "expected a .npy, .csv, .tsv or .parquet file"),
        ("words.csv", "a,b\nc,d\ne,f\n", "no numeric column"),
        ("long_row.csv", "a,b\n1,2\n3,4,5\n", "Expected 2 fields in line 3, saw 3"),
        ("short_row.csv", "a,b\n1,2\n3\n4,5\n", "row 2 (line 3 of the file), column 'b'"),
        ("empty.csv", "", "the file is empty"),
        ("header_only.csv", "a,b,c\n", "the file has a header and no rows"),
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


@pytest.fixture
def frame(data):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(data, columns=["angle, in radians", "height", "noise"])
    frame["species"] = np.where(data[:, 0] > 0, "setosa", "virginica")
    return frame


def _scored(capsys):
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines()[1:-1]]
    return captured, rows


def test_a_csv_written_by_pandas(tmp_path, frame, capsys):
    """Quoted names holding commas, pandas' unnamed index and a text column: the index and the
    text are not scored, with a notice each, and the names are kept."""
    path = tmp_path / "frame.csv"
    frame.to_csv(path)
    assert main(["score", str(path)]) == 0
    captured, rows = _scored(capsys)
    assert "index" in captured.err and "'species' is not numeric: skipped" in captured.err
    assert [" ".join(row[:-1]) for row in rows] == ["angle, in radians", "height", "noise"]
    expected = distance_correlation_one_vs_rest(frame.iloc[:, :3].to_numpy())
    assert [float(row[-1]) for row in rows] == pytest.approx(expected, abs=1e-4)


def test_columns_and_index_chosen_by_name(tmp_path, frame, capsys):
    path = tmp_path / "frame.csv"
    frame.rename_axis("id").to_csv(path)
    assert main(["score", str(path), "--index-col", "id", "--columns", "height", "noise"]) == 0
    captured, rows = _scored(capsys)
    assert [row[0] for row in rows] == ["height", "noise"]
    assert main(["score", str(path), "--columns", "species", "height"]) == 2
    assert "'species' is not numeric" in capsys.readouterr().err
    assert main(["score", str(path), "--columns", "weight"]) == 2
    assert "no column named 'weight'" in capsys.readouterr().err


def test_missing_values_are_named_or_dropped(tmp_path, frame, capsys):
    frame.loc[4, "height"] = np.nan
    path = tmp_path / "frame.csv"
    frame.to_csv(path, index=False)
    assert main(["score", str(path)]) == 2
    message = capsys.readouterr().err
    assert "row 5 (line 6 of the file), column 'height' (column 2)" in message
    assert "--dropna" in message
    assert main(["score", str(path), "--dropna"]) == 0
    assert "dropped 1 rows with missing values" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("suffix", "separator", "option"), [(".tsv", "\t", []), (".txt", ";", ["--delimiter", ";"])]
)
def test_other_delimiters(tmp_path, frame, capsys, suffix, separator, option):
    path = tmp_path / f"frame{suffix}"
    frame.to_csv(path, sep=separator, index=False)
    assert main(["score", str(path), *option]) == 0
    _, rows = _scored(capsys)
    assert rows[1][0] == "height"


def test_parquet(tmp_path, frame, capsys):
    pytest.importorskip("pyarrow")
    path = tmp_path / "frame.parquet"
    frame.to_parquet(path, index=False)
    assert main(["score", str(path)]) == 0
    _, rows = _scored(capsys)
    assert [row[0] for row in rows][1:] == ["height", "noise"]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("spaces.csv", "a, b ,c\n 1, 2,3\n4 ,5, 6\n7,8,9\n"),
        ("crlf.csv", "a,b,c\r\n1,2,3\r\n4,5,6\r\n7,8,9\r\n"),
        ("bom.csv", "\ufeffa,b,c\n1,2,3\n4,5,6\n7,8,9\n"),
        ("quoted.csv", '"a","b","c"\n"1","2","3"\n"4","5","6"\n"7","8","9"\n'),
        ("exponents.tsv", "a\tb\tc\n1e0\t2.0\t3\n4\t5E0\t6\n7\t8\t+9\n"),
    ],
)
def test_awkward_text_files_read_as_pandas_reads_them(tmp_path, capsys, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode())
    assert main(["score", str(path), "--metric", "pearson"]) == 0
    captured, rows = _scored(capsys)
    assert [row[0] for row in rows] == ["a", "b", "c"], captured.err
    assert [float(row[1]) for row in rows] == pytest.approx([1.0, 1.0, 1.0])


def test_missing_markers_and_a_headerless_file(tmp_path, capsys):
    path = tmp_path / "markers.csv"
    path.write_text("1,2,3\n4,NA,6\n7,8,9\n10,11,12\n")
    assert main(["score", str(path)]) == 2
    assert "row 2 (line 2 of the file), column '1' (column 2)" in capsys.readouterr().err


def test_parquet_with_nullable_and_boolean_columns(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame(
        {
            "count": pd.array([1, 2, None, 4, 5, 6], dtype="Int64"),
            "flag": [True, False, True, True, False, False],
            "x": np.arange(6.0),
            "label": list("abcdef"),
        }
    ).set_index("label")
    path = tmp_path / "frame.parquet"
    frame.to_parquet(path)
    assert main(["score", str(path)]) == 2
    assert "row 3, column 'count' (column 1); pass --dropna" in capsys.readouterr().err
    assert main(["score", str(path), "--dropna"]) == 0
    captured, rows = _scored(capsys)
    assert [row[0] for row in rows] == ["count", "flag", "x"]
    assert "dropped 1 rows" in captured.err


def test_without_pandas_text_files_say_what_to_install(tmp_path, data, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    path = tmp_path / "features.csv"
    np.savetxt(path, data, delimiter=",")
    assert main(["score", str(path)]) == 2
    assert "needs pandas: pip install 'sklearn-adm[cli]'" in capsys.readouterr().err
    np.save(tmp_path / "features.npy", data)
    assert main(["score", str(tmp_path / "features.npy")]) == 0
