"""UCI Adult (census income) encoded as LIBSVM's a9a: 123 binary features, label 1 = income ">50K".

a9a (Platt 1998) keeps every row (32,561 train / 16,281 test) and the 14 columns in file order: each of the
8 categorical columns becomes one indicator per category listed in adult.names (in that order; "?" sets
none of them), and each of the 6 continuous columns one indicator per bin. The bins are hard-coded below:
quintiles of adult.data taken so that a value equal to a cut point falls in the upper bin, with a value
that holds more than a fifth of the rows kept as a bin of its own (education-num 9 and 10, 40 hours), and
capital gain/loss split into zero / non-zero. These cut points reproduce the a9a file exactly on the rows
checked (its first 272 rows, all bins, and the fnlwgt cut at 106648).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataFileError

CONTINUOUS_BINS = {  # column -> cut points; bin = number of cut points <= value
    "age": [26, 33, 41, 50],
    "fnlwgt": [106648, 158662, 196338, 259873],
    "education-num": [9, 10, 11, 13],
    "capital-gain": [1],
    "capital-loss": [1],
    "hours-per-week": [35, 40, 41, 48],
}
CATEGORIES = {  # as listed in adult.names
    "workclass": "Private, Self-emp-not-inc, Self-emp-inc, Federal-gov, Local-gov, State-gov, Without-pay, "
                 "Never-worked",
    "education": "Bachelors, Some-college, 11th, HS-grad, Prof-school, Assoc-acdm, Assoc-voc, 9th, 7th-8th, "
                 "12th, Masters, 1st-4th, 10th, Doctorate, 5th-6th, Preschool",
    "marital-status": "Married-civ-spouse, Divorced, Never-married, Separated, Widowed, "
                      "Married-spouse-absent, Married-AF-spouse",
    "occupation": "Tech-support, Craft-repair, Other-service, Sales, Exec-managerial, Prof-specialty, "
                  "Handlers-cleaners, Machine-op-inspct, Adm-clerical, Farming-fishing, Transport-moving, "
                  "Priv-house-serv, Protective-serv, Armed-Forces",
    "relationship": "Wife, Own-child, Husband, Not-in-family, Other-relative, Unmarried",
    "race": "White, Asian-Pac-Islander, Amer-Indian-Eskimo, Other, Black",
    "sex": "Female, Male",
    "native-country": "United-States, Cambodia, England, Puerto-Rico, Canada, Germany, "
                      "Outlying-US(Guam-USVI-etc), India, Japan, Greece, South, China, Cuba, Iran, Honduras, "
                      "Philippines, Italy, Poland, Jamaica, Vietnam, Mexico, Portugal, Ireland, France, "
                      "Dominican-Republic, Laos, Ecuador, Taiwan, Haiti, Columbia, Hungary, Guatemala, "
                      "Nicaragua, Scotland, Thailand, Yugoslavia, El-Salvador, Trinadad&Tobago, Peru, Hong, "
                      "Holand-Netherlands",
}
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]


def _layout() -> list[tuple[str, int, object]]:
    """(column, first feature index, cut points or {category: offset}) for the 14 columns, in order."""
    layout, start = [], 0
    for col in COLUMNS:
        if col in CONTINUOUS_BINS:
            cuts = CONTINUOUS_BINS[col]
            layout.append((col, start, np.asarray(cuts)))
            start += len(cuts) + 1
        else:
            names = [c.strip() for c in CATEGORIES[col].split(",")]
            layout.append((col, start, {c: i for i, c in enumerate(names)}))
            start += len(names)
    return layout


LAYOUT = _layout()
NUM_FEATURES = LAYOUT[-1][1] + len(LAYOUT[-1][2])  # 123


def read_adult(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Features float32 [n, 123] (0/1) and labels int64 [n] of adult.data or adult.test.

    Blank lines and comment lines starting with "|" (adult.test's first line) are skipped; a trailing "."
    on the label (adult.test) is ignored.
    """
    rows, labels = [], []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataFileError(f"{path} cannot be read as UTF-8 text ({e})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("|"):
            continue
        fields = [v.strip() for v in line.split(",")]
        if len(fields) != 15:
            raise DataFileError(f"{path}:{lineno}: expected 15 comma-separated fields, got {len(fields)}")
        label = fields[14].rstrip(".")
        if label not in ("<=50K", ">50K"):
            raise DataFileError(f"{path}:{lineno}: label must be <=50K or >50K, got {fields[14]!r}")
        rows.append(fields[:14])
        labels.append(label == ">50K")
    if not rows:
        raise DataFileError(f"{path} holds no data rows")
    x = np.zeros((len(rows), NUM_FEATURES), dtype=np.float32)
    row_ids = np.arange(len(rows))
    for j, (col, start, coding) in enumerate(LAYOUT):
        values = [r[j] for r in rows]
        if isinstance(coding, np.ndarray):
            try:
                numbers = np.array(values, dtype=np.int64)
            except ValueError as e:
                raise DataFileError(f"{path}: column {col!r} holds a non-integer value ({e})") from None
            x[row_ids, start + np.searchsorted(coding, numbers, side="right")] = 1
        else:
            unknown = set(values) - set(coding) - {"?"}
            if unknown:
                raise DataFileError(f"{path}: column {col!r} has unknown value(s) {sorted(unknown)[:5]}")
            hit = np.array([v != "?" for v in values], dtype=bool)
            index = np.array([coding.get(v, 0) for v in values], dtype=np.int64)
            x[row_ids[hit], start + index[hit]] = 1
    return x, np.array(labels, dtype=np.int64)
