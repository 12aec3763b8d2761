"""The redaction patterns and schema_only's shapes, as units: what is replaced and what is left,
checksums (Luhn, IBAN mod 97), operator patterns and their validation, and hostile texts."""

from __future__ import annotations

import json

import pytest
from traitlets import TraitError

from agent_core.config.configurable import Cellwright
from agent_core.privacy import shapes
from agent_core.privacy.outgoing import narrowest, prepare
from agent_core.privacy.patterns import PIECE_CHARS, Redactor, compile_patterns, iban_valid, luhn_valid


def redacted(text: str, *custom: str) -> tuple[str, int]:
    redactor = Redactor(compile_patterns(custom))
    return redactor.text(text), redactor.count


@pytest.mark.parametrize("card", ["4111 1111 1111 1111", "4111111111111111", "5500-0000-0000-0004", "378282246310005"])
def test_a_card_number_with_a_valid_checksum_is_replaced(card: str) -> None:
    assert luhn_valid(card)
    assert redacted(f"paid with {card}.") == ("paid with [REDACTED:card].", 1)


@pytest.mark.parametrize("number", ["4111 1111 1111 1112", "1234567890123456", "5500-0000-0000-0005"])
def test_a_number_that_fails_the_luhn_check_stays(number: str) -> None:
    assert not luhn_valid(number)
    assert redacted(f"id {number}") == (f"id {number}", 0)


def test_ibans_are_replaced_only_with_a_valid_checksum() -> None:
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and iban_valid("DE89370400440532013000")
    assert not iban_valid("GB82 WEST 1234 5698 7654 33") and not iban_valid("DE89370400440532013001")
    assert redacted("to GB82 WEST 1234 5698 7654 32 and DE89370400440532013000") == (
        "to [REDACTED:iban] and [REDACTED:iban]",
        2,
    )
    assert redacted("not DE89370400440532013001")[1] == 0


def test_emails_phones_tokens_and_passwords_in_urls() -> None:
    text = (
        "mail alice.smith@example.com or call +44 20 7946 0958 / (212) 555-0187 / 415-555-0100; "
        "key sk-proj-abcdefghijklmnopqrstuv, ghp_abcdefghijklmnopqrstuvwxyz0123456789, AKIAIOSFODNN7EXAMPLE; "
        "Authorization: Bearer abcdefghijklmnop.qrstuvwx; db postgresql://bob:hunter2@db.example.com:5432/sales; "
        'api_key = "s3cr3t-v4lue-123"'
    )
    out, count = redacted(text)
    for secret in ("alice.smith@", "7946 0958", "555-0187", "555-0100", "sk-proj", "ghp_", "AKIA", "hunter2", "s3cr3t"):
        assert secret not in out, secret
    assert "postgresql://bob:[REDACTED:password]@db.example.com" in out  # the user and host stay
    assert 'api_key = "[REDACTED:secret]"' in out
    assert count == 10


@pytest.mark.parametrize(
    "text",
    [
        "total = 1234567 + 2024",
        "date 2024-01-15 at 12:30",
        "pi 3.14159265358979",
        'api_key = os.environ["OPENAI_API_KEY"]',
        "x = y +1 2",
        "version 1.2.3-4",
    ],
)
def test_ordinary_text_and_code_stay(text: str) -> None:
    assert redacted(text) == (text, 0)


def test_operator_patterns_extend_the_list_and_are_checked() -> None:
    assert redacted("employee EMP-123456 joined", r"EMP-\d{6}") == ("employee [REDACTED:custom] joined", 1)
    with pytest.raises(ValueError, match=r"redaction_patterns\[1\] .* not a valid regular expression"):
        compile_patterns([r"ok", r"(unclosed"])
    with pytest.raises(ValueError, match="exponential time"):
        compile_patterns([r"(a+)+$"])
    with pytest.raises(TraitError, match=r"Cellwright.redaction_patterns\[0\]"):
        Cellwright(redaction_patterns=["[z-a]"])
    assert Cellwright(redaction_patterns=[r"EMP-\d{6}"]).agent_settings().redaction_patterns == (r"EMP-\d{6}",)


def test_hostile_text_is_handled() -> None:
    """Near misses of every pattern, far longer than an operator pattern's piece: handled, and pieces
    are cut so a match is never longer than PIECE_CHARS (the work of each search is bounded)."""
    hostile = ("a" * 70 + "@" + "b." * 200 + " 4111 " * 100 + "+1 " * 100 + "GB82 " * 50 + "eyJ" * 300) * 20
    assert redacted(hostile) == (hostile, 0)
    long_line = "x" * (PIECE_CHARS * 3)
    assert redacted(long_line, r"x+") == ("[REDACTED:custom]" * 3, 3)


def test_schema_only_shapes_of_tool_results() -> None:
    cell = "[cell_id cw-1, execution_count 3]\n    name  email\n0  Ann  ann@x.org\n[1 rows x 2 columns]\nValueError: bad 'ann' 42"
    shaped = shapes.tool_result("run_cell", {}, cell)
    assert shaped.startswith("[cell_id cw-1, execution_count 3]\n[cell output: 4 lines")
    assert "[1 rows x 2 columns]" in shaped and "error ValueError: bad '…' #" in shaped and "Ann" not in shaped
    source = "f.py (lines 1-1 of 1)\n     1\tprint('hello')"
    assert shapes.tool_result("read_file", {"path": "f.py"}, source) == source  # source code stays
    table = "t.csv (lines 1-3 of 3)\n     1\ta,b\n     2\t1,2\n     3\t3,4"
    assert shapes.tool_result("read_file", {"path": "t.csv"}, table) == (
        "t.csv (lines 1-3 of 3)\ncolumns: a,b\n[3 lines of contents withheld: data_policy is schema_only]"
    )
    sql = "2 rows from 'db' (0.01 s), tab-separated:\nname\tage\nAnn\t31\nBo\t40\n\nTo work with the full result ..."
    shaped = shapes.tool_result("sql_query", {"database": "db"}, sql)
    assert "columns: name\tage" in shaped and "[2 rows withheld" in shaped and "Ann" not in shaped
    assert "To work with the full result" in shaped
    assert "Ann" not in shapes.tool_result("mcp__crm__find", {}, "Ann, ann@x.org")
    assert shapes.tool_result("write_todos", {}, "Todos updated.") == "Todos updated."
    failed = shapes.tool_result("sql_query", {}, "sql_query failed: the database refused: no row 'Ann' (code 42)")
    assert failed == "sql_query failed: the database refused: no row '…' (code #)"
    rejected = "The user rejected this call. Reason: not the email column. Do not run it again unchanged."
    assert shapes.tool_result("run_cell", {}, rejected) == rejected


def test_prepare_leaves_the_state_alone_and_names_sources() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": "p.csv"})},
    }
    messages = [
        {"role": "user", "content": "mail ann@x.org"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "p.csv (lines 1-2 of 2)\n     1\ta\n     2\tann@x.org"},
    ]
    before = json.dumps(messages)
    out = prepare(messages, [], "schema_only")
    assert json.dumps(messages) == before  # the thread's own messages are not touched
    assert "ann@x.org" not in json.dumps(out.messages) and out.redactions == 1
    assert out.sources == [{"kind": "file", "name": "p.csv"}]
    assert prepare(messages, [], "full").messages is messages
    assert narrowest("full", "schema_only", "redact") == "schema_only" and narrowest("full", "redact") == "redact"
