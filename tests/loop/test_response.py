"""``budgetconf.loop._response``: reading model responses strictly, and describing tools."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest

from budgetconf._usage import NO_USAGE
from budgetconf.loop import Usage
from budgetconf.loop._response import (
    Call,
    Malformed,
    Response,
    read_response,
    tool_specs,
    tool_text,
)


def read(raw: object, turn: int = 1) -> Response:
    return read_response(raw, turn)


def one_call(call: object) -> Call:
    """The single call of a response that holds only ``call``."""
    [only] = read({"tool_calls": [call]}).calls
    return only


def malformed(raw: object) -> str:
    """The message of the `Malformed` that ``raw`` raises."""
    with pytest.raises(Malformed) as caught:
        read(raw)
    return str(caught.value)


def function_of(tool: object, name: str = "tool") -> dict[str, Any]:
    """The ``function`` part of the spec that tool_specs makes for ``tool``."""
    [spec] = tool_specs({name: tool})  # type: ignore[dict-item]
    assert spec["type"] == "function"
    function: dict[str, Any] = spec["function"]
    return function


# --- the shapes a response may take ----------------------------------------------------


def test_a_dict_with_every_key_is_read() -> None:
    """content, tool_calls, finish_reason, usage and cost_usd from a dict."""
    response = read(
        {
            "content": "thinking",
            "tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "hi"}}],
            "finish_reason": "tool_calls",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "cost_usd": 0.25,
        }
    )
    assert response == Response(
        "thinking",
        (Call("c1", "echo", {"text": "hi"}, '{"text": "hi"}'),),
        "tool_calls",
        Usage(10, 0, 5, 15, 0.25, "reported"),
    )


def test_a_plain_object_is_read_by_attribute() -> None:
    """An object such as SimpleNamespace gives the same response as the dict."""
    response = read(
        SimpleNamespace(
            content="done",
            tool_calls=None,
            finish_reason="stop",
            usage=SimpleNamespace(total_tokens=7),
            cost_usd=1,
        )
    )
    assert response == Response("done", (), "stop", Usage(0, 0, 0, 7, 1.0, "reported"))
    assert isinstance(response.cost, float)


@pytest.mark.parametrize(
    "raw", [{}, SimpleNamespace(content=None), SimpleNamespace(tool_calls=None)]
)
def test_every_key_is_optional(raw: object) -> None:
    """An empty response is a final answer with no content, no tokens and no cost."""
    assert read(raw) == Response(None, (), "stop", Usage())


def test_usage_is_read_split_with_its_cached_tokens_and_model() -> None:
    """prompt_tokens (cached ones included), completion_tokens and total_tokens, the cached
    count from prompt_tokens_details, and the model the response names, from a dict or an
    object such as the OpenAI client's."""
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    expected = Usage(1200, 1024, 300, 1500, 0.0, "none", "gpt-4o-mini")
    assert read({"content": "x", "usage": usage, "model": "gpt-4o-mini"}).usage == expected
    details = SimpleNamespace(cached_tokens=1024)
    parts = {k: v for k, v in usage.items() if k != "prompt_tokens_details"}
    shaped = SimpleNamespace(**parts, prompt_tokens_details=details)
    assert read(SimpleNamespace(content="x", usage=shaped, model="gpt-4o-mini")).usage == expected
    assert read({"content": "x", "usage": {"total_tokens": 9}}).usage == Usage(0, 0, 0, 9)
    assert read({"content": "x", "usage": {"prompt_tokens": 4}}).usage.total_tokens == 4


def test_a_model_name_that_is_no_text_is_dropped_and_nothing_is_reported() -> None:
    """A response naming its model with a number and reporting no usage used nothing known."""
    usage = read({"content": "x", "model": 5}).usage
    assert usage is NO_USAGE
    assert usage.model is None


def test_usages_are_equal_and_hash_alike_by_every_field_and_only_to_usages() -> None:
    """Two usages with the same counts are one key; a tuple of the same numbers is not one."""
    a, b = Usage(3, 1, 2, None, 0.5, "reported", "m"), Usage(3, 1, 2, 5, 0.5, "reported", "m")
    assert a == b
    assert len({a, b, Usage(3, 1, 2, 5, 0.5, "reported")}) == 2
    assert a != (3, 1, 2, 5, 0.5, "reported", "m")
    assert a.to_dict() == {
        "input_tokens": 3,
        "cached_input_tokens": 1,
        "output_tokens": 2,
        "total_tokens": 5,
        "cost_usd": 0.5,
        "cost_source": "reported",
    }


def test_a_cached_count_that_is_no_count_is_malformed() -> None:
    details = {"cached_tokens": -1}
    problem = malformed({"usage": {"total_tokens": 3, "prompt_tokens_details": details}})
    assert problem == "usage.prompt_tokens_details.cached_tokens: expected a count, got -1"


@pytest.mark.parametrize("raw", [SimpleNamespace(), object(), {1}], ids=repr)
def test_an_object_with_none_of_the_keys_is_not_a_response(raw: object) -> None:
    """An object with no content, tool_calls or finish_reason is Malformed, not an empty answer."""
    with pytest.raises(Malformed, match="expected a dict or an object with content"):
        read(raw)


@pytest.mark.parametrize(
    ("raw", "finish"),
    [
        ({"content": "x"}, "stop"),
        ({"content": "x", "tool_calls": []}, "stop"),
        ({"tool_calls": [{"name": "echo"}]}, "tool_calls"),
        (SimpleNamespace(tool_calls=[SimpleNamespace(name="echo")]), "tool_calls"),
    ],
    ids=["no-calls", "empty-calls", "calls", "object-calls"],
)
def test_a_missing_finish_reason_is_read_from_the_calls(raw: object, finish: str) -> None:
    """Without finish_reason: tool_calls when there are calls, else stop."""
    assert read(raw).finish_reason == finish


@pytest.mark.parametrize("finish", ["stop", "tool_calls", "length", "content_filter", "refusal"])
def test_every_documented_finish_reason_is_kept(finish: str) -> None:
    """A known finish_reason is taken as given."""
    raw = {"content": "x", "finish_reason": finish, "tool_calls": [{"name": "echo"}]}
    assert read(raw).finish_reason == finish


def test_tool_calls_as_the_finish_reason_needs_calls() -> None:
    """finish_reason tool_calls without a call is Malformed, not an empty final answer."""
    with pytest.raises(Malformed, match="finish_reason is tool_calls, but the response has no"):
        read({"content": None, "finish_reason": "tool_calls"})


@pytest.mark.parametrize(
    "raw",
    [
        {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]},
        {"message": {"content": "hi"}, "finish_reason": None},
    ],
    ids=["completion", "choice"],
)
def test_a_completion_or_choice_is_not_taken_for_a_message(raw: object) -> None:
    """Passing the whole completion, or a choice, says what to pass instead."""
    with pytest.raises(Malformed, match=r"pass choices\[0\]\.message"):
        read(raw)


def test_arguments_json_cannot_hold_are_malformed() -> None:
    """A mapping of arguments with a non-text key cannot be written to the transcript."""
    with pytest.raises(Malformed, match=r"tool_calls\[0\]\.arguments: not a JSON object"):
        read({"tool_calls": [{"name": "echo", "arguments": {("a",): "x"}}]})


def test_a_tuple_of_calls_is_read_like_a_list() -> None:
    """tool_calls as a tuple holds the same calls."""
    response = read({"tool_calls": ({"id": "a", "name": "echo"},)})
    assert [c.id for c in response.calls] == ["a"]


class CallList(list):  # type: ignore[type-arg]
    """A list type of an SDK's own."""


def test_a_list_subclass_of_calls_is_read_like_a_list() -> None:
    """tool_calls as a subclass of list is a list of calls."""
    response = read({"tool_calls": CallList([{"id": "a", "name": "echo"}])})
    assert [c.id for c in response.calls] == ["a"]


def test_the_response_as_an_assistant_message() -> None:
    """message() is the OpenAI assistant message, with calls in the nested shape."""
    response = read(
        {"content": None, "tool_calls": [{"id": "a", "name": "add", "arguments": "{}"}]}
    )
    assert response.message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        ],
    }
    assert read({"content": "hi"}).message() == {"role": "assistant", "content": "hi"}


# --- tool calls ------------------------------------------------------------------------


def test_calls_without_an_id_are_named_by_turn_and_index() -> None:
    """A call without an id gets call_<turn>_<index>; a given id is kept."""
    raw = {"tool_calls": [{"name": "echo"}, {"id": "mine", "name": "echo"}, {"name": "add"}]}
    assert [c.id for c in read(raw, turn=4).calls] == ["call_4_0", "mine", "call_4_2"]


def test_a_generated_id_never_collides_with_a_given_one() -> None:
    """An id given as call_1_1 does not clash with the id made for a call without one."""
    raw = {"tool_calls": [{"id": "call_1_1", "name": "echo"}, {"name": "echo"}]}
    ids = [c.id for c in read(raw, turn=1).calls]
    assert ids[0] == "call_1_1"
    assert len(set(ids)) == 2


@pytest.mark.parametrize(
    "call",
    [
        {"id": "c9", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}},
        SimpleNamespace(
            id="c9", type="function", function=SimpleNamespace(name="add", arguments='{"a": 2}')
        ),
    ],
    ids=["dict", "object"],
)
def test_the_openai_nested_shape_is_read(call: object) -> None:
    """{"id", "type": "function", "function": {"name", "arguments": "<json>"}} is one call."""
    assert one_call(call) == Call("c9", "add", {"a": 2}, '{"a": 2}')


def test_arguments_as_json_text_are_parsed_and_kept_as_sent() -> None:
    """JSON text arguments become a dict; raw_arguments is the text exactly as sent."""
    call = one_call({"name": "add", "arguments": '{ "a": 2,  "b": 3 }'})
    assert call.arguments == {"a": 2, "b": 3}
    assert call.raw_arguments == '{ "a": 2,  "b": 3 }'
    assert call.problem is None


def test_arguments_as_a_mapping_are_copied_and_written_as_json() -> None:
    """A mapping is taken as the arguments (a copy) and written out as JSON text."""
    given = {"text": "héllo"}
    call = one_call({"name": "echo", "arguments": given})
    assert call.arguments == given
    assert call.arguments is not given
    assert json.loads(call.raw_arguments) == given
    assert "héllo" in call.raw_arguments


@pytest.mark.parametrize("arguments", [None, "", "   "], ids=["none", "empty", "blank"])
def test_no_arguments_mean_none(arguments: str | None) -> None:
    """Missing, empty or blank arguments are an empty object."""
    raw: dict[str, object] = {"name": "echo"}
    if arguments is not None:
        raw["arguments"] = arguments
    call = one_call(raw)
    assert call.arguments == {}
    assert call.problem is None


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("{text: hi", "arguments are not valid JSON"),
        ('{"a": ', "arguments are not valid JSON"),
        ("[1, 2]", "arguments are not a JSON object"),
        ('"text"', "arguments are not a JSON object"),
        ("null", "arguments are not a JSON object"),
    ],
    ids=["broken", "cut-short", "array", "string", "null"],
)
def test_unreadable_arguments_are_a_problem_not_malformed(arguments: str, problem: str) -> None:
    """Arguments that are not a JSON object: a Call with arguments None and the reason."""
    call = one_call({"id": "x", "name": "echo", "arguments": arguments})
    assert call.arguments is None
    assert call.raw_arguments == arguments
    assert call.problem is not None
    assert call.problem.startswith(problem)


# --- Malformed -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", [None, "done", b"done", ["done"], ("done",), 5, 2.5, True], ids=repr
)
def test_a_response_that_is_not_a_dict_or_object_is_malformed(raw: object) -> None:
    """None, text, bytes, a list, a tuple or a number is no response."""
    assert "expected a dict or an object" in malformed(raw)


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"content": 5}, "content"),
        ({"content": ["a", "b"]}, "content"),
        ({"content": b"text"}, "content"),
        ({"tool_calls": 5}, "tool_calls"),
        ({"tool_calls": "echo"}, "tool_calls"),
        ({"tool_calls": [5]}, "tool_calls[0]"),
        ({"tool_calls": [{"id": "a"}]}, "tool_calls[0]"),
        ({"tool_calls": [{"id": "a", "name": ""}]}, "tool_calls[0]"),
        ({"tool_calls": [{"id": "a", "name": 7}]}, "tool_calls[0]"),
        ({"tool_calls": [{"name": "echo"}, {"id": 7, "name": "echo"}]}, "tool_calls[1].id"),
        ({"tool_calls": [{"id": "", "name": "echo"}]}, "tool_calls[0].id"),
        ({"tool_calls": [{"id": "a", "function": "add"}]}, "tool_calls[0].function"),
        ({"tool_calls": [{"name": "echo", "arguments": 5}]}, "tool_calls[0].arguments"),
        ({"tool_calls": [{"name": "echo", "arguments": [1]}]}, "tool_calls[0].arguments"),
        ({"finish_reason": "done"}, "finish_reason"),
        ({"finish_reason": ""}, "finish_reason"),
        ({"finish_reason": 1}, "finish_reason"),
        ({"usage": {"total_tokens": -1}}, "usage.total_tokens"),
        ({"usage": {"total_tokens": True}}, "usage.total_tokens"),
        ({"usage": {"total_tokens": 1.5}}, "usage.total_tokens"),
        ({"usage": {"total_tokens": "10"}}, "usage.total_tokens"),
        ({"cost_usd": -0.01}, "cost_usd"),
        ({"cost_usd": math.nan}, "cost_usd"),
        ({"cost_usd": math.inf}, "cost_usd"),
        ({"cost_usd": True}, "cost_usd"),
        ({"cost_usd": "0.1"}, "cost_usd"),
    ],
    ids=[
        "content-int",
        "content-list",
        "content-bytes",
        "tool_calls-int",
        "tool_calls-str",
        "call-int",
        "call-without-name",
        "call-empty-name",
        "call-name-int",
        "id-int",
        "id-empty",
        "function-str",
        "arguments-int",
        "arguments-list",
        "finish-unknown",
        "finish-empty",
        "finish-int",
        "tokens-negative",
        "tokens-bool",
        "tokens-float",
        "tokens-text",
        "cost-negative",
        "cost-nan",
        "cost-inf",
        "cost-bool",
        "cost-text",
    ],
)
def test_a_malformed_response_names_the_key(raw: dict[str, object], names: str) -> None:
    """Each broken part of a response is Malformed, with a message that starts at its key."""
    assert malformed(raw).startswith(names + ":")


def test_a_call_without_a_name_says_a_name_is_expected() -> None:
    """The message for a nameless call asks for a tool name."""
    assert malformed({"tool_calls": [{"id": "a", "arguments": {}}]}) == (
        "tool_calls[0]: expected a tool name, got None"
    )


def test_duplicate_call_ids_are_malformed() -> None:
    """Two calls with one id cannot both be answered: Malformed, naming the id."""
    message = malformed({"tool_calls": [{"id": "a", "name": "echo"}, {"id": "a", "name": "add"}]})
    assert message.startswith("tool_calls:")
    assert "'a'" in message


@pytest.mark.parametrize(
    "raw",
    [
        {"tool_calls": "x" * 500},
        {"finish_reason": "x" * 500},
    ],
    ids=["tool_calls", "finish_reason"],
)
def test_a_long_text_value_is_shortened_in_the_message(raw: dict[str, object]) -> None:
    """A long wrong value is quoted only in part, so the message stays short."""
    message = malformed(raw)
    assert "x" * 40 in message
    assert "x" * 41 not in message


@pytest.mark.parametrize("tool_calls", [{}, "", 0, False], ids=repr)
def test_a_falsy_tool_calls_that_is_not_a_list_is_malformed(tool_calls: object) -> None:
    """tool_calls must be a list (or null) even when it is empty-ish: {} is not a list."""
    assert malformed({"content": "x", "tool_calls": tool_calls}).startswith("tool_calls:")


@pytest.mark.parametrize("finish", [["stop"], {"reason": "stop"}], ids=["list", "dict"])
def test_an_unhashable_finish_reason_is_malformed(finish: object) -> None:
    """finish_reason as a list or dict is Malformed, never a TypeError."""
    assert malformed({"finish_reason": finish}).startswith("finish_reason:")


# --- usage -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 5}, 15),
        ({"prompt_tokens": 10}, 10),
        ({"completion_tokens": 4}, 4),
        ({}, 0),
        (SimpleNamespace(prompt_tokens=3, completion_tokens=4), 7),
    ],
    ids=["both", "prompt", "completion", "empty", "object"],
)
def test_usage_without_total_tokens_sums_prompt_and_completion(usage: object, tokens: int) -> None:
    """Without total_tokens, the count is prompt_tokens + completion_tokens."""
    assert read({"usage": usage}).tokens == tokens


def test_total_tokens_wins_over_the_parts() -> None:
    """When total_tokens is given, it is the count."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 20}
    assert read({"usage": usage}).tokens == 20


def test_zero_total_tokens_is_a_count() -> None:
    """total_tokens 0 is read as 0, not as missing."""
    assert read({"usage": {"total_tokens": 0, "prompt_tokens": 9}}).tokens == 0


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "5", "completion_tokens": 3},
        {"prompt_tokens": True, "completion_tokens": 3},
        {"prompt_tokens": -5, "completion_tokens": 10},
    ],
    ids=["text", "bool", "negative"],
)
def test_usage_parts_must_be_counts(usage: dict[str, object]) -> None:
    """Without total_tokens, a part that is not a non-negative int is Malformed."""
    assert malformed({"usage": usage}).startswith("usage.")


@pytest.mark.parametrize("usage", [500, "500 tokens", [500]], ids=repr)
def test_usage_that_is_not_a_mapping_or_object_is_malformed(usage: object) -> None:
    """A usage of 500 must not pass as 0 tokens: a token budget would never be reached."""
    assert malformed({"usage": usage}).startswith("usage")


@pytest.mark.parametrize(("cost", "read_as"), [(0, 0.0), (2, 2.0), (0.125, 0.125)])
def test_cost_is_a_non_negative_number(cost: float, read_as: float) -> None:
    """cost_usd as an int or a float is read as a float."""
    assert read({"cost_usd": cost}).cost == read_as


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        (
            {"total_tokens": 2**40 + 1},
            "usage.total_tokens: more tokens than one response can use (1099511627777)",
        ),
        ({"total_tokens": 2**63 - 1}, "usage.total_tokens: more tokens than one response can"),
        ({"total_tokens": 10**5000}, "usage.total_tokens: more tokens than one response can use"),
        (
            {"prompt_tokens": 2**40, "completion_tokens": 1},
            "usage.prompt_tokens + usage.completion_tokens: more tokens than one response",
        ),
        ({"prompt_tokens": 1.5}, "usage.prompt_tokens: expected a count, got 1.5"),
        ({"completion_tokens": None, "prompt_tokens": False}, "usage.prompt_tokens"),
    ],
    ids=["2**40 + 1", "2**63 - 1", "5000 digits", "parts past 2**40", "float", "bool"],
)
def test_a_count_past_what_a_count_can_be_is_malformed(usage: object, problem: str) -> None:
    """A response reports 0 to 2**40 tokens; past it, Malformed: no model answers with more,
    and a total below 2**53 stays exact in every ledger."""
    assert malformed({"usage": usage}).startswith(problem)


def test_the_largest_count_is_read() -> None:
    """2**40 tokens is a count, also as its two parts."""
    assert read({"usage": {"total_tokens": 2**40}}).tokens == 2**40
    assert read({"usage": {"prompt_tokens": 2**39, "completion_tokens": 2**39}}).tokens == 2**40


def test_a_cost_past_what_a_response_can_cost_is_malformed() -> None:
    """A response costs at most 10**6 USD; past it, Malformed naming cost_usd."""
    assert read({"cost_usd": 10**6}).cost == 10**6
    problem = malformed({"cost_usd": 1_000_000.01})
    assert problem == "cost_usd: more than one response can cost (1000000.01 USD)"


@pytest.mark.parametrize(
    "cost",
    [-0.5, math.inf, math.nan, 10**400, "0.1", True],
    ids=["negative", "inf", "nan", "huge int", "text", "bool"],
)
def test_a_cost_that_is_no_amount_is_malformed(cost: object) -> None:
    """Negative, infinite, NaN, past any float, text or a boolean: Malformed, naming cost_usd."""
    assert malformed({"cost_usd": cost}).startswith("cost_usd: expected a non-negative number")


class Sly(str):
    """Text whose own methods misbehave: only its characters may be used."""

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparison")

    def __str__(self) -> str:
        raise RuntimeError("no str")


class Pricey(float):
    """A float subclass (as numpy's are) whose conversions and comparisons lie."""

    def __float__(self) -> float:
        return -1.0

    def __lt__(self, other: object) -> bool:
        return False


def test_text_of_a_str_subclass_is_read_as_plain_str() -> None:
    """Content, names, ids, finish reasons and argument text come out as plain str."""
    raw = {
        "content": Sly("hi"),
        "finish_reason": Sly("tool_calls"),
        "tool_calls": [{"id": Sly("c1"), "name": Sly("echo"), "arguments": Sly('{"a": 1}')}],
    }
    response = read(raw)
    [only] = response.calls
    values = [response.content, response.finish_reason, only.id, only.name, only.raw_arguments]
    assert values == ["hi", "tool_calls", "c1", "echo", '{"a": 1}']
    assert {type(v) for v in values} == {str}
    assert only.arguments == {"a": 1}


def test_a_number_subclass_is_read_by_its_value() -> None:
    """A float subclass's own __float__ is not asked: the cost is the number it holds."""
    assert read({"cost_usd": Pricey(0.25)}).cost == 0.25
    assert type(read({"cost_usd": Pricey(0.25)}).cost) is float


def test_arguments_in_a_mapping_that_is_not_a_dict_are_written_as_an_object() -> None:
    """A read-only mapping of arguments is recorded as a JSON object, as a dict is."""
    from types import MappingProxyType

    call = one_call({"name": "echo", "arguments": MappingProxyType({"text": "hi"})})
    assert (call.arguments, call.raw_arguments) == ({"text": "hi"}, '{"text": "hi"}')


# --- tool_specs ------------------------------------------------------------------------


def echo(text: str, times: int = 1) -> str:
    """Say the text again.

    More words that are not the description.
    """
    return text * times


def typed(s: str, i: int, f: float, b: bool, other: list[str], bare) -> None:  # type: ignore[no-untyped-def]
    """Every kind of annotation."""


def test_annotations_under_postponed_evaluation_give_json_types() -> None:
    """String annotations (from __future__ import annotations) map to JSON types."""
    properties = function_of(typed)["parameters"]["properties"]
    assert properties == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "other": {},
        "bare": {},
    }


def test_class_annotations_give_json_types() -> None:
    """Annotations that are classes map to the same JSON types."""

    def tool(s, i, f, b, other):  # type: ignore[no-untyped-def]
        return None

    tool.__annotations__ = {"s": str, "i": int, "f": float, "b": bool, "other": dict}
    assert function_of(tool)["parameters"]["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "other": {},
    }


def test_required_are_the_parameters_without_defaults() -> None:
    """Parameters with a default are optional, keyword-only ones included."""

    def tool(a: int, b: int = 2, *, c: str, d: str = "x") -> None:
        return None

    parameters = function_of(tool)["parameters"]
    assert parameters["type"] == "object"
    assert list(parameters["properties"]) == ["a", "b", "c", "d"]
    assert parameters["required"] == ["a", "c"]


def test_star_args_and_star_kwargs_are_skipped() -> None:
    """*args and **kwargs are not parameters a model can name."""

    def tool(a: int, *args: int, **kwargs: str) -> None:
        return None

    parameters = function_of(tool)["parameters"]
    assert parameters["properties"] == {"a": {"type": "integer"}}
    assert parameters["required"] == ["a"]


def test_the_description_is_the_first_docstring_line() -> None:
    """Only the docstring's first line describes the tool."""
    assert function_of(echo)["description"] == "Say the text again."


def test_a_tool_without_a_docstring_has_no_description() -> None:
    """No docstring, no description key."""

    def tool(a: int) -> int:
        return a

    assert "description" not in function_of(tool)


def test_a_builtin_without_a_signature_has_no_parameters() -> None:
    """A builtin that inspect cannot read (max) gets an empty parameter list."""
    function = function_of(max, name="max")
    assert function["name"] == "max"
    assert function["parameters"] == {"type": "object", "properties": {}, "required": []}
    assert function["description"]


def test_a_callable_object_is_described_by_its_call() -> None:
    """An object with __call__ is described by its call's parameters."""

    class Search:
        """Search the notes."""

        def __call__(self, query: str) -> str:
            return query

    function = function_of(Search())
    assert function["parameters"]["properties"] == {"query": {"type": "string"}}
    assert function["parameters"]["required"] == ["query"]
    assert function["description"] == "Search the notes."


def test_one_spec_per_tool_in_order() -> None:
    """Each tool becomes one {"type": "function"} spec, in the mapping's order."""
    specs = tool_specs({"b": max, "a": min})
    assert [spec["type"] for spec in specs] == ["function", "function"]
    assert [spec["function"]["name"] for spec in specs] == ["b", "a"]


@pytest.mark.parametrize("tool", [echo, typed, print], ids=["echo", "typed", "print"])
def test_the_spec_is_named_after_the_tool(tool: object) -> None:
    """The spec's name is the tool's key in the mapping, whatever its parameters."""
    assert function_of(tool, name="my_tool")["name"] == "my_tool"


# --- tool_text -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "plain", '{"already": "json"}', "ünïcode\nlines"])
def test_tool_text_keeps_text_unchanged(text: str) -> None:
    """A str return value is the tool message exactly."""
    assert tool_text(text) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (5, "5"),
        (2.5, "2.5"),
        (True, "true"),
        (None, "null"),
        ([1, "a"], '[1, "a"]'),
        ({"a": 1}, '{"a": 1}'),
        ({"word": "é"}, '{"word": "é"}'),
    ],
    ids=["int", "float", "bool", "none", "list", "dict", "non-ascii"],
)
def test_tool_text_writes_other_values_as_json(value: object, text: str) -> None:
    """Anything else is written as JSON, non-ASCII kept as it is."""
    assert tool_text(value) == text


def test_tool_text_writes_what_json_cannot_hold_as_its_text() -> None:
    """A value JSON has no form for is written as its str, never an exception."""

    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert json.loads(tool_text({"x": Thing()})) == {"x": "a thing"}
