"""``budgetconf run --base-url URL --model-name NAME``, end to end against a server on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetconf.cli import main

from conftest import Place
from helpers.chat_server import Failure, Silence, Trickle, reply, serving

KEY = "sk-not-for-printing"
ECHO = reply(calls=[("c1", "echo", {"text": "hi"})])


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    return code, captured.out, captured.err


def server(url: str, *more: str) -> list[str]:
    return ["--base-url", url, "--model-name", "local-model", "--max-retries", "0", *more]


def test_a_run_through_the_server_prints_its_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """The server runs the demo tools through the loop; the answer is printed, exit 0."""
    with serving([ECHO, reply("the answer")]) as chat:
        code, out, err = run([*server(chat.url), "say hi"], capsys)

    assert (code, out, err) == (0, "the answer\n", "")
    first = chat.received[0]
    assert (first.body["model"], first.body["messages"]) == (
        "local-model",
        [{"role": "user", "content": "say hi"}],
    )
    assert [t["function"]["name"] for t in first.body["tools"]] == ["echo", "add"]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert chat.bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "hi"}


def test_the_key_comes_from_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--api-key-env APP_KEY`` sends $APP_KEY, not $OPENAI_API_KEY."""
    monkeypatch.setenv("APP_KEY", "sk-app")
    with serving([reply("ok")]) as chat:
        code, _, _ = run([*server(chat.url, "--api-key-env", "APP_KEY"), "go"], capsys)

    assert code == 0
    assert chat.received[0].headers["authorization"] == "Bearer sk-app"


def test_a_truncated_run_exits_2_with_one_warning_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that keeps calling tools is stopped by BUDGETCONF_MAX_STEPS=2; the line says so."""
    monkeypatch.setenv("BUDGETCONF_MAX_STEPS", "2")
    with serving([ECHO]) as chat:
        code, out, err = run([*server(chat.url), "go"], capsys)

    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "loop.max_steps = 2" in err
    assert "from env:BUDGETCONF_MAX_STEPS;" in err
    assert err.endswith("; raise it with BUDGETCONF_MAX_STEPS or --max-steps\n")
    assert len(chat.received) == 2


def test_the_json_document_counts_the_servers_turns(capsys: pytest.CaptureFixture[str]) -> None:
    """``--output json``: the run's document, with the tool call the server asked for."""
    with serving([ECHO, reply("done", usage=(4, 2))]) as chat:
        code, out, _ = run([*server(chat.url, "--output", "json"), "go"], capsys)

    document = json.loads(out)
    assert code == 0
    assert (document["status"], document["turns"], document["tool_calls_executed"]) == (
        "ok",
        2,
        1,
    )
    (last,) = [e for e in document["events"] if e["type"] == "model_response" and e["turn"] == 2]
    assert last["tokens"] == 6


def test_a_refused_connection_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening: a failed run, one stderr line naming the URL; no traceback."""
    with serving([reply()]) as chat:
        pass  # stopped: its port now refuses connections
    code, out, err = run([*server(chat.url), "go"], capsys)

    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith(f"budgetconf: failed: cannot reach {chat.url}")


def test_the_console_script_fails_without_a_traceback(place: Place) -> None:
    """The installed command, as a user runs it, against a port nobody listens on."""
    with serving([reply()]) as chat:
        pass
    command = Path(sys.executable).with_name("budgetconf")
    result = subprocess.run(
        [str(command), "run", *server(chat.url), "go"],
        capture_output=True,
        text=True,
        cwd=place.work,
        check=False,
    )

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1
    assert "cannot reach" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_http_error_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The server's error status and message, on one line; exit 1."""
    with serving([Failure(500, {"error": {"message": "out of memory"}})]) as chat:
        code, _, err = run([*server(chat.url), "go"], capsys)

    assert code == 1
    assert err == f"budgetconf: failed: {chat.url} answered HTTP 500: out of memory (turn 1)\n"


def test_the_request_timeout_bounds_each_request(capsys: pytest.CaptureFixture[str]) -> None:
    """``--request-timeout 0.2`` against a server that never answers: a failed run."""
    with serving([Silence()]) as chat:
        code, _, err = run([*server(chat.url, "--request-timeout", "0.2"), "go"], capsys)

    assert code == 1
    assert err == f"budgetconf: failed: {chat.url} did not answer within 0.2 s (turn 1)\n"


def test_max_retries_retries_a_server_error(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-retries 1``: a 503 is tried again, and the second answer is used."""
    with serving([Failure(503, {}), reply("second time lucky")]) as chat:
        args = ["--base-url", chat.url, "--model-name", "m", "--max-retries", "1", "go"]
        code, out, _ = run(args, capsys)

    assert (code, out) == (0, "second time lucky\n")
    assert len(chat.received) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "s.json", "--base-url", "http://127.0.0.1:9/v1"], "not allowed with argument"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --model-name"),
        (["--model", "s.json", "--model-name", "m"], "--model-name goes with --base-url"),
        (["--model", "s.json", "--max-retries", "1"], "--max-retries goes with --base-url"),
        (["--base-url", "127.0.0.1:9/v1", "--model-name", "m"], "expected an http:// or https://"),
        (["--base-url", "http://", "--model-name", "m"], "expected an http:// or https://"),
        (
            ["--base-url", "http://h/v1", "--model-name", "m", "--request-timeout", "0"],
            "--request-timeout: expected a number of seconds above 0, got '0'",
        ),
        (
            ["--base-url", "http://h/v1", "--model-name", "m", "--request-timeout", "inf"],
            "--request-timeout: expected a number of seconds above 0, got 'inf'",
        ),
        (
            ["--base-url", "http://h/v1", "--model-name", "m", "--request-timeout", "soon"],
            "--request-timeout: expected a number of seconds above 0, got 'soon'",
        ),
        (
            ["--base-url", "http://h/v1", "--model-name", "m", "--max-retries", "two"],
            "--max-retries: expected a whole number from 0 to 9223372036854775807, got 'two'",
        ),
        (
            ["--base-url", "http://h/v1", "--model-name", "m", "--api-key-env", "NO_SUCH_KEY"],
            "no API key in $NO_SUCH_KEY",
        ),
    ],
    ids=[
        "script-and-server",
        "no-model-name",
        "model-name-with-script",
        "retries-with-script",
        "url-without-scheme",
        "url-without-host",
        "zero-timeout",
        "endless-timeout",
        "timeout-not-a-number",
        "retries-not-a-number",
        "key-variable-unset",
    ],
)
def test_usage_errors_exit_64_with_one_line(
    place: Place, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """A server command line that cannot be carried out: exit 64 and one line, before any run."""
    place.write("s.json", '{"responses": [{"content": "x"}]}\n')
    code, out, err = run([*args, "go"], capsys)

    assert (code, out) == (64, "")
    assert err.count("\n") == 1
    assert err.startswith("budgetconf: usage error: ")
    assert message in err


def test_without_a_key_the_error_says_where_to_put_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No $OPENAI_API_KEY: a usage error naming the variable and --api-key-env."""
    monkeypatch.delenv("OPENAI_API_KEY")
    code, _, err = run(["--base-url", "http://127.0.0.1:9/v1", "--model-name", "m", "go"], capsys)

    assert code == 64
    assert "no API key in $OPENAI_API_KEY" in err
    assert "--api-key-env" in err


def test_without_the_extra_the_usage_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With openai missing, --base-url is a usage error that names the extra to install."""
    monkeypatch.setitem(sys.modules, "openai", None)  # what Python does for a missing package
    monkeypatch.delitem(sys.modules, "budgetconf.integrations.openai", raising=False)

    code, _, err = run(["--base-url", "http://127.0.0.1:9/v1", "--model-name", "m", "go"], capsys)

    assert code == 64
    assert err.count("\n") == 1
    assert "pip install 'budgetconf[openai]'" in err


def test_the_urls_user_and_password_are_shown_nowhere(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL with ``user:password@``: the error line, the document and the events name the host."""
    with serving([reply()]) as chat:
        pass  # stopped: its port now refuses connections
    url = chat.url.replace("://", "://u:hunter2@")
    code, out, err = run([*server(url), "go"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"budgetconf: failed: cannot reach {chat.url}: ")

    events = place.work / "events.jsonl"
    code, out, err = run([*server(url, "--output", "json", "--events", str(events)), "go"], capsys)
    assert code == 1
    assert json.loads(out)["message"].startswith(f"failed: cannot reach {chat.url}: ")
    for shown in (out, err, events.read_text(encoding="utf-8")):
        assert "hunter2" not in shown
        assert "u:" not in shown


def test_a_bad_url_is_shown_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    """The usage error about a URL that is not http(s) leaves its user and password out."""
    code, _, err = run([*server("ftp://u:hunter2@127.0.0.1:9/v1"), "go"], capsys)

    assert code == 64
    assert err == (
        "budgetconf: usage error: --base-url: expected an http:// or https:// URL,"
        " got 'ftp://127.0.0.1:9/v1'\n"
    )


@pytest.mark.parametrize("secret", ["pa/ss", "pa?ss", "pa#ss", "p@ss", "pa ss"])
def test_a_password_holding_a_slash_or_a_mark_is_shown_nowhere(
    secret: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Credentials run to the URL's last @, wherever its authority would end."""
    code, _, err = run([*server(f"ftp://u:{secret}-hunter2@127.0.0.1:9/v1"), "go"], capsys)
    assert code == 64
    assert "hunter2" not in err
    assert "got 'ftp://127.0.0.1:9/v1'" in err


def test_the_key_is_masked_in_the_servers_own_message(capsys: pytest.CaptureFixture[str]) -> None:
    """A server that repeats the key in its error text: the line shows ``***`` in its place."""
    said = {"error": {"message": f"Incorrect API key provided: {KEY}."}}
    with serving([Failure(401, said)]) as chat:
        code, _, err = run([*server(chat.url), "go"], capsys)

    assert code == 1
    assert err == (
        f"budgetconf: failed: {chat.url} answered HTTP 401:"
        " Incorrect API key provided: ***. (turn 1)\n"
    )


_NO_PORT = "the port is not a number from 1 to 65535"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/v1", f"{_NO_PORT}, got 'http://127.0.0.1:99999/v1'"),
        ("http://127.0.0.1:abc/v1", f"{_NO_PORT}, got 'http://127.0.0.1:abc/v1'"),
        ("http://127.0.0.1:0/v1", f"{_NO_PORT}, got 'http://127.0.0.1:0/v1'"),
        ("http://127.0.0.1:+80/v1", f"{_NO_PORT}, got 'http://127.0.0.1:+80/v1'"),
        ("http://[::1/v1", "not a URL (Invalid IPv6 URL), got 'http://[::1/v1'"),
        ("http://[zz]/v1", "not a URL ('zz' does not appear to be an IPv4 or IPv6 address)"),
        (
            "http://127.0.0.1:8000/v1\n",
            "a URL holds no spaces or control characters, got 'http://127.0.0.1:8000/v1\\n'",
        ),
        ("http://a b/v1", "a URL holds no spaces or control characters, got 'http://a b/v1'"),
        ("http://\u200b/v1", "a URL holds no spaces or control characters"),
        ("http:///v1", "the URL names no host, got 'http:///v1'"),
        ("http://u:pw@:80/v1", "the URL names no host, got 'http://:80/v1'"),
        ("http://999.1.1.1/v1", "'http://999.1.1.1/v1' is refused: Invalid IPv4 address"),
    ],
    ids=[
        "port-too-large",
        "port-not-digits",
        "port-zero",
        "port-signed",
        "unclosed-bracket",
        "bracketed-non-address",
        "trailing-newline",
        "space",
        "zero-width-space",
        "no-host",
        "credentials-but-no-host",
        "address-out-of-range",
    ],
)
def test_a_malformed_base_url_is_one_usage_line(
    capsys: pytest.CaptureFixture[str], url: str, message: str
) -> None:
    """What the URL parser or the client refuses is a usage error in one line, not a traceback."""
    code, out, err = run([*server(url), "go"], capsys)

    assert (code, out) == (64, "")
    assert err.count("\n") == 1
    assert err.startswith("budgetconf: usage error: --base-url: ")
    assert message in err
    assert "pw" not in err


def test_the_console_script_refuses_a_url_with_a_newline_in_one_line(place: Place) -> None:
    """The installed command, given a URL pasted with its newline: exit 64, no traceback."""
    command = Path(sys.executable).with_name("budgetconf")
    result = subprocess.run(
        [str(command), "run", *server("http://127.0.0.1:8000/v1\n"), "go"],
        capture_output=True,
        text=True,
        cwd=place.work,
        check=False,
    )

    assert (result.returncode, result.stdout) == (64, "")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_the_request_timeout_bounds_a_request_sent_a_byte_at_a_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--request-timeout is a deadline for the whole request, not for each read of it."""
    with serving([Trickle(reply("x" * 300))]) as chat:  # some ten seconds to send it all
        started = time.monotonic()
        code, _, err = run([*server(chat.url, "--request-timeout", "0.5"), "go"], capsys)
        took = time.monotonic() - started

    assert code == 1
    assert err == f"budgetconf: failed: {chat.url} did not answer within 0.5 s (turn 1)\n"
    assert took < 3


@pytest.mark.parametrize("seconds", ["1e300", "1.7976931348623157e308", "9300000000"])
def test_any_request_timeout_the_option_takes_works(
    capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    """A request timeout past what a socket takes is no error: the request is simply not cut."""
    with serving([reply("the answer")]) as chat:
        code, out, err = run([*server(chat.url, "--request-timeout", seconds), "go"], capsys)

    assert (code, out, err) == (0, "the answer\n", "")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--request-timeout", "5_0"),
        ("--request-timeout", "\u0661\u0660"),
        ("--request-timeout", "infinity"),
        ("--request-timeout", "1e400"),
        ("--max-retries", "9" * 5000),
        ("--max-retries", "9223372036854775808"),
        ("--max-retries", "\u0662"),
    ],
    ids=[
        "underscore",
        "arabic-indic",
        "infinity",
        "past-a-float",
        "5000-digits",
        "2**63",
        "digit-two",
    ],
)
def test_numbers_are_read_as_strictly_as_every_number(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    """The server options take ASCII numbers within bounds, as budgetconf's fields do."""
    code, _, err = run([*server("http://127.0.0.1:9/v1", option, value), "go"], capsys)

    assert code == 64
    assert err.count("\n") == 1
    assert err.startswith(f"budgetconf: usage error: {option}: expected ")


def test_max_retries_ignores_leading_zeros(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-retries 0000…01`` is 1, as a count in any other place is."""
    with serving([Failure(500, {"error": {"message": "busy"}}), reply("ok")]) as chat:
        args = [*server(chat.url), "--max-retries", "0" * 40 + "1", "go"]
        code, out, _ = run(args, capsys)

    assert (code, out) == (0, "ok\n")
