"""Workspace rules (agent_core/impact/rules.py): parsing the user's `.cellwright/rules.md`,
appending a rule saved from a rejection, the warnings a card gets, the prompt section, and a
hostile rules file that must load bounded and without error. Real files in a temporary root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core.impact import (
    RULES_FILE,
    Rule,
    analyze_code,
    append_rule,
    load_rules,
    rule_from_rejection,
    rule_warnings,
    rules_prompt_section,
)
from agent_core.impact.rules import MAX_RULE_CHARS, MAX_RULES, MAX_RULES_BYTES, parse_rule
from agent_core.undo.rules import prompt_section, rules_of

PHRASINGS = [
    ("Never install packages", "installs", ()),
    ("no pip installs", "installs", ()),
    ("No installs.", "installs", ()),
    ("please don't pip install anything", "installs", ()),
    ("don't use the network", "network", ()),
    ("No network access", "network", ()),
    ("Never download data from the internet", "network", ()),
    ("no shell commands", "shell", ()),
    ("Do not run subprocess or bash", "shell", ()),
    ("don't write files", "files_written", ()),
    ("Never delete files", "files_written", ()),
    ("Don't write or delete files", "files_written", ()),
    ("don't overwrite raw_df", None, ("raw_df",)),
    ("do not modify `raw_df`", None, ("raw_df",)),
    ("Never change df_raw.", None, ("df_raw",)),
    ("leave raw_df alone", None, ("raw_df",)),
    ("Leave `X_train` and `y_train` alone", None, ("X_train", "y_train")),
    ("Don’t touch customers or orders", None, ("customers", "orders")),
    ("Keep baseline unchanged", None, ("baseline",)),
    ("raw_df is read-only", None, ("raw_df",)),
    ("Prefer polars over pandas", None, ()),
    ("Explain each step briefly", None, ()),
    ("Don't forget to save the plots", None, ()),
    ("no, that is the wrong folder", None, ()),
    ("There is no need to explain the files", None, ()),
]


@pytest.mark.parametrize("text, forbids, protects", PHRASINGS)
def test_phrasings(text: str, forbids: str | None, protects: tuple[str, ...]) -> None:
    rule = parse_rule(text)
    assert (rule.forbids, rule.protects) == (forbids, protects)
    assert rule.text == " ".join(text.split())


def _write(root: Path, text: str | bytes) -> Path:
    path = root / RULES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)  # type: ignore[operator]
    return path


def test_load_rules_reads_markdown_lists(tmp_path: Path) -> None:
    assert load_rules(tmp_path) == []  # no file
    _write(
        tmp_path,
        "<!-- a comment\n- not a rule inside the comment -->\n# Rules\n\n"
        "- Never install packages\n* no network access\n+ Explain each step\n"
        "1. don't overwrite `raw_df`\n2) No shell commands\nplain prose is not a rule\n-   \n",
    )
    rules = load_rules(tmp_path)
    assert [rule.text for rule in rules] == [
        "Never install packages",
        "no network access",
        "Explain each step",
        "don't overwrite `raw_df`",
        "No shell commands",
    ]
    assert [rule.forbids for rule in rules] == ["installs", "network", None, None, "shell"]
    assert rules[3].protects == ("raw_df",)


def test_append_creates_the_folder_with_a_header(tmp_path: Path) -> None:
    rule = append_rule(tmp_path, "no pip installs")
    assert rule == Rule(text="no pip installs", forbids="installs")
    text = (tmp_path / RULES_FILE).read_text()
    assert text.startswith("<!--") and text.endswith("- no pip installs\n")
    append_rule(tmp_path, "- don't overwrite\nraw_df  ")  # newlines collapsed, the list dash not doubled
    append_rule(tmp_path, "No pip installs")  # already there (case aside): not added twice
    assert [rule.text for rule in load_rules(tmp_path)] == ["no pip installs", "don't overwrite raw_df"]
    assert load_rules(tmp_path)[1].protects == ("raw_df",)


def test_append_after_a_hand_edit_without_final_newline(tmp_path: Path) -> None:
    _write(tmp_path, "- Explain each step")
    append_rule(tmp_path, "No shell commands")
    assert [rule.text for rule in load_rules(tmp_path)] == ["Explain each step", "No shell commands"]


def test_append_bounds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs some text"):
        append_rule(tmp_path, " \n\t ")
    long = append_rule(tmp_path, "x" * 5_000)
    assert len(long.text) == MAX_RULE_CHARS
    _write(tmp_path, "".join(f"- rule number {index}\n" for index in range(MAX_RULES)))
    with pytest.raises(ValueError, match="already holds"):
        append_rule(tmp_path, "one more rule")
    _write(tmp_path, "- a rule\n" + "<!-- " + "z" * (MAX_RULES_BYTES - 200) + " -->\n")
    with pytest.raises(ValueError, match="is full"):
        append_rule(tmp_path, "y" * 250)
    assert (tmp_path / RULES_FILE).stat().st_size < MAX_RULES_BYTES


def test_rules_path_cannot_leave_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "rules.md").write_text("- never install packages\n")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / ".cellwright")
    assert load_rules(root) == []
    assert rules_of(root) == [] and prompt_section(root) == ""  # what the system prompt and the cards read
    with pytest.raises(ValueError, match="outside"):
        append_rule(root, "no network access")
    assert (outside / "rules.md").read_text() == "- never install packages\n"


def test_hostile_rules_files_load_bounded(tmp_path: Path) -> None:
    _write(tmp_path, os.urandom(200_000))  # binary garbage
    assert len(load_rules(tmp_path)) <= MAX_RULES
    _write(tmp_path, "".join(f"- never install packages {index}\n" for index in range(10_000)))  # 10 000 lines
    rules = load_rules(tmp_path)
    assert len(rules) == MAX_RULES and rules[0].forbids == "installs"
    _write(tmp_path, "- " + "a" * 5_000_000 + "\n- never install packages\n")  # one huge line, then a rule
    rules = load_rules(tmp_path)
    assert len(rules) == 1 and len(rules[0].text) == MAX_RULE_CHARS  # only the first 32 KB are read
    _write(tmp_path, "- \x00no shell\x1bcommands\u202e\n- \udcff".encode("utf-8", "surrogatepass"))
    assert load_rules(tmp_path)[0].forbids == "shell"
    (tmp_path / RULES_FILE).unlink()
    (tmp_path / RULES_FILE).mkdir()  # a folder where the file should be
    assert load_rules(tmp_path) == []
    with pytest.raises(ValueError, match="Cannot write"):
        append_rule(tmp_path, "no shell commands")


def test_warnings_for_installs_and_a_protected_name() -> None:
    rules = [parse_rule("Never install packages"), parse_rule("don't overwrite raw_df"), parse_rule("Prefer polars")]
    impact = analyze_code("%pip install seaborn\nraw_df = raw_df.dropna()\nraw_df['a'] = 1")
    assert rule_warnings(rules, impact) == [
        'Breaks the rule "Never install packages": %pip install seaborn (line 1)',
        'Breaks the rule "don\'t overwrite raw_df": assigns raw_df (line 2)',
    ]
    impact = analyze_code("raw_df.drop(columns='x', inplace=True)\ndel raw_df")
    assert rule_warnings(rules, impact) == [
        'Breaks the rule "don\'t overwrite raw_df": changes raw_df (line 1), deletes raw_df (line 2)'
    ]
    assert rule_warnings(rules, analyze_code("df = raw_df.copy()\n!ls")) == []


def test_unknown_code_cannot_be_vouched_for() -> None:
    warnings = rule_warnings([parse_rule("no network access")], analyze_code("exec(payload)"))
    assert warnings == ['Cannot check the rule "no network access": exec(payload) (line 1) is beyond static analysis']


def test_rule_from_rejection() -> None:
    installs = analyze_code("%pip install seaborn")
    assert rule_from_rejection(installs, "no pip installs") == "no pip installs"
    assert rule_from_rejection(installs, "not now, I am offline") == "Never install packages"
    assert rule_from_rejection(installs, "") == "Never install packages"
    assert rule_from_rejection(analyze_code("requests.get(u)"), "hmm") == "No network access"
    assert rule_from_rejection(analyze_code("!ls"), "") == "No shell commands"
    assert rule_from_rejection(analyze_code("df.to_csv('a.csv')"), "") == "Don't write or delete files"
    assert rule_from_rejection(analyze_code("raw_df.dropna(inplace=True)"), "wrong") == "Don't modify raw_df"
    assert rule_from_rejection(analyze_code("x = 1"), "use polars\ninstead") == "use polars instead"
    assert rule_from_rejection(analyze_code("!ls"), "no that is the wrong folder") == "No shell commands"
    for code in ("%pip install seaborn", "requests.get(u)", "!ls", "df.to_csv('a.csv')", "raw_df.dropna(inplace=True)"):
        derived = parse_rule(rule_from_rejection(analyze_code(code), ""))
        assert derived.forbids or derived.protects, code  # a derived rule is one the cards can check


def test_prompt_section() -> None:
    assert rules_prompt_section([]) == ""
    section = rules_prompt_section([parse_rule("Never install packages"), parse_rule("Explain each step")])
    assert RULES_FILE in section
    assert "- Never install packages\n- Explain each step\n" in section


def test_saved_rule_round_trip(tmp_path: Path) -> None:
    """Reject with a reason, save it as a rule, and the next card for the same kind of code warns."""
    rejected = analyze_code("%pip install seaborn")
    append_rule(tmp_path, rule_from_rejection(rejected, "no pip installs"))
    rules = load_rules(tmp_path)
    assert "no pip installs" in rules_prompt_section(rules)
    later = analyze_code("import subprocess\nsubprocess.run(['pip', 'install', 'polars'])")
    assert rule_warnings(rules, later) == ['Breaks the rule "no pip installs": pip install polars (line 2)']
