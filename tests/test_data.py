"""The Larkfield tickets: rebuilt byte for byte, shaped as promised, refused when damaged."""

import csv
import hashlib
import io
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DATA))

import generate  # noqa: E402
import ticketnet  # noqa: E402

SPLITS = {"train": 4696, "valid": 600, "test": 600}


@pytest.fixture(scope="module")
def splits():
    return {name: ticketnet.load_split(DATA / f"{name}.csv") for name in SPLITS}


# --- rebuilding -----------------------------------------------------------------------------

def test_regenerating_reproduces_the_committed_files_byte_for_byte(tmp_path):
    assert generate.main(["--out", str(tmp_path)]) == 0
    for name in generate.FILES:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), f"{name} differs from a fresh build"


def test_check_passes_on_the_committed_files_and_names_a_changed_one(tmp_path, capsys):
    assert generate.main(["--check"]) == 0
    for name in generate.FILES:
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    with open(tmp_path / "valid.csv", "a", encoding="utf-8") as f:
        f.write("LF-999999,an extra ticket,delivery,plain\n")
    capsys.readouterr()
    assert generate.main(["--check", "--out", str(tmp_path)]) == 1
    assert "valid.csv" in capsys.readouterr().out


def test_sha256sums_lists_the_hash_of_every_split():
    listed = dict(reversed(line.split("  ")) for line in (DATA / "SHA256SUMS").read_text().splitlines())
    assert set(listed) == {f"{name}.csv" for name in SPLITS}
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, f"{name} does not match SHA256SUMS"


def test_generator_shares_teams_and_tokenizer_with_ticketnet(splits):
    assert generate.TEAMS == ticketnet.TEAMS
    for row in splits["valid"]:
        assert generate.count_tokens(row["text"]) == len(ticketnet.tokenize(row["text"]))


# --- shape ----------------------------------------------------------------------------------

def test_splits_have_the_promised_rows_and_columns():
    for name, size in SPLITS.items():
        with open(DATA / f"{name}.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        assert rows[0] == list(ticketnet.COLUMNS)
        assert len(rows) - 1 == size, f"{name}.csv has {len(rows) - 1} tickets, expected {size}"


def test_every_ticket_has_a_known_team_and_style_and_a_well_formed_unique_id(splits):
    ids = [row["ticket_id"] for rows in splits.values() for row in rows]
    assert all(re.fullmatch(r"LF-\d{6}", i) for i in ids)
    assert len(set(ids)) == len(ids), "a ticket id is used twice"
    for name, rows in splits.items():
        assert {row["team"] for row in rows} == set(ticketnet.TEAMS), name
        assert {row["style"] for row in rows} == set(generate.STYLES), name


def test_no_text_occurs_twice_within_or_across_splits(splits):
    texts = Counter(row["text"] for rows in splits.values() for row in rows)
    repeated = [text for text, n in texts.items() if n > 1]
    assert not repeated, f"{len(repeated)} texts repeat, e.g. {repeated[0]!r}"


def test_valid_and_test_have_the_same_style_mix(splits):
    valid = Counter(row["style"] for row in splits["valid"])
    test = Counter(row["style"] for row in splits["test"])
    assert valid == test
    assert valid["plain"] == 180


def test_teams_are_balanced_in_every_split(splits):
    for name, rows in splits.items():
        counts = Counter(row["team"] for row in rows)
        assert max(counts.values()) - min(counts.values()) <= 0.03 * len(rows), (name, counts)


def test_label_noise_is_about_one_and_a_half_percent(splits):
    built = generate.build()
    for name, rows in splits.items():
        truth = {row["ticket_id"]: row["true_team"] for row in built[name]}
        wrong = sum(row["team"] != truth[row["ticket_id"]] for row in rows)
        assert wrong == round(len(rows) * generate.NOISE_RATE), name


def test_readme_examples_are_tickets_from_train(splits):
    train = {row["ticket_id"]: row for row in splits["train"]}
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r"^> (.*) \(`(LF-\d{6})`, (\w+)", readme, flags=re.M)
    assert len(examples) == 2 * len(generate.STYLES)
    for text, ticket, team in examples:
        assert train[ticket]["text"] == text and train[ticket]["team"] == team, ticket


# --- loading and refusing -------------------------------------------------------------------

def test_load_split_reads_every_file(splits):
    for name, size in SPLITS.items():
        assert len(splits[name]) == size
        assert set(splits[name][0]) == set(ticketnet.COLUMNS)


def _lines(count=6):
    """The header and the first tickets of valid.csv, as text lines."""
    return (DATA / "valid.csv").read_text(encoding="utf-8").splitlines(keepends=True)[:count]


def _with_quoted_text_last():
    """Lines whose last ticket has a quoted text (one with a comma in it)."""
    lines = _lines(40)
    last = max(i for i, line in enumerate(lines) if ',"' in line)
    return lines[:last + 1]


def _replace_field(line, column, value):
    fields = next(csv.reader([line]))
    fields[ticketnet.COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    return out.getvalue()


def _missing_columns():
    lines = _lines()
    return "".join(",".join(f for f in line.rstrip("\n").split(",") if f not in ("team", "style")) + "\n"
                   if i == 0 else line for i, line in enumerate(lines)), 1


def _unknown_team():
    lines = _lines()
    lines[3] = _replace_field(lines[3], "team", "garden")
    return "".join(lines), 4


def _empty_text():
    lines = _lines()
    lines[5] = _replace_field(lines[5], "text", "  ")
    return "".join(lines), 6


def _cut_inside_quoted_text():
    lines = _with_quoted_text_last()
    last = lines[-1]
    return "".join(lines[:-1]) + last[:last.index(',"') + 12], len(lines)


def _text_after_a_closing_quote():
    lines = _lines()
    fields = next(csv.reader([lines[2]]))
    lines[2] = f'{fields[0]},"{fields[1]}"?,{fields[2]},{fields[3]}\n'
    return "".join(lines), 3


def _cut_inside_row():
    lines = _lines()  # cut after the team, so the row ends one field short
    return "".join(lines[:-1]) + lines[-1][:lines[-1].rindex(",") - 2], len(lines)


_DAMAGES = {  # what the message says after "line N: "
    _missing_columns: r"missing column\(s\) team, style; expected the header ticket_id,text,team,style, "
                      r"found ticket_id,text$",
    _unknown_team: r"unknown team 'garden'; expected one of delivery, returns, payment, warranty, account$",
    _empty_text: r"empty text in ticket 'LF-\d{6}'$",
    _cut_inside_quoted_text: r"not valid CSV \(.+\); is the file truncated\?$",
    _text_after_a_closing_quote: r"not valid CSV \(.+\); is the file truncated\?$",
    _cut_inside_row: r"3 fields where the header has 4; is the file truncated or a comma unquoted\?$",
}


@pytest.mark.parametrize("damage", _DAMAGES, ids=lambda damage: damage.__name__.strip("_"))
def test_damaged_file_is_refused_naming_the_file_and_line(tmp_path, damage):
    content, line = damage()
    path = tmp_path / f"{damage.__name__.strip('_')}.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ticketnet.DataError) as error:
        ticketnet.load_split(path)
    assert str(error.value).startswith(f"{path}: line {line}: ")
    assert re.search(_DAMAGES[damage], str(error.value)), str(error.value)



def test_load_split_reads_utf8_whatever_the_locale(splits, ascii_locale):
    assert any(not row["text"].isascii() for row in splits["valid"])
    with ascii_locale():
        assert ticketnet.load_split(DATA / "valid.csv") == splits["valid"]


def test_load_split_keeps_line_breaks_inside_a_quoted_text_as_written(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b'ticket_id,text,team,style\r\n'
                     b'LF-000001,"Hello,\r\nmy parcel is late",delivery,plain\r\n')
    assert ticketnet.load_split(path) == [{"ticket_id": "LF-000001", "text": "Hello,\r\nmy parcel is late",
                                           "team": "delivery", "style": "plain"}]


def test_load_split_skips_blank_lines_and_reads_the_tickets_after_them(tmp_path):
    lines = _lines()
    path = tmp_path / "gaps.csv"
    path.write_text("".join(lines[:3]) + "\n" + "".join(lines[3:]), encoding="utf-8")
    assert ticketnet.load_split(path) == ticketnet.load_split(DATA / "valid.csv")[:len(lines) - 1]


def test_load_split_refuses_a_missing_file_naming_the_splits(tmp_path):
    with pytest.raises(ticketnet.DataError, match=r"nothing\.csv: no such file \(the splits are "
                                                  r"data/train\.csv, valid\.csv, test\.csv\)$"):
        ticketnet.load_split(tmp_path / "nothing.csv")


@pytest.mark.parametrize("content, says", [
    ("", "the file is empty; expected a header ticket_id,text,team,style"),
    ("ticket_id,text,team,style\n", "a header but no tickets"),
], ids=["empty", "header only"])
def test_load_split_refuses_a_file_without_tickets_saying_what_it_found(tmp_path, content, says):
    path = tmp_path / "split.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ticketnet.DataError) as error:
        ticketnet.load_split(path)
    assert str(error.value) == f"{path}: {says}"


# --- the data card --------------------------------------------------------------------------

def test_data_card_tables_are_up_to_date():
    """Slow (it trains the baselines); pytest-xdist runs it beside the rest of the suite."""
    result = subprocess.run([sys.executable, str(DATA / "card.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
