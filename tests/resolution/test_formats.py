"""JSON, TOML and YAML parsers: values, the line of every value, and what each refuses."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from budgetconf._formats import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    Items,
    ParseError,
    Table,
    parse_json,
    parse_toml,
    parse_yaml,
    readable,
)
from budgetconf._record import Unusable

# --- JSON ----------------------------------------------------------------------------------


def test_json_one_line_puts_every_value_on_line_one() -> None:
    """In a one-line document every key, nested ones too, is on line 1."""
    table = parse_json('{"loop": {"max_steps": 5, "last_turn": "wrap_up"}, "x": 1}')
    assert table == {"loop": {"max_steps": 5, "last_turn": "wrap_up"}, "x": 1}
    assert table.lines == {"loop": 1, "x": 1}
    assert table.line == 1
    assert isinstance(table["loop"], Table)
    assert table["loop"].lines == {"max_steps": 1, "last_turn": 1}
    assert table["loop"].line == 1


def test_json_multi_line_lines_follow_the_keys() -> None:
    """Each key has the line it is written on; a section's line is that of its opening brace."""
    text = (
        "{\n"  # 1
        '  "loop":\n'  # 2
        "  {\n"  # 3
        '    "max_steps": 5,\n'  # 4
        '    "last_turn":\n'  # 5
        '      "wrap_up",\n'  # 6
        '    "inner": {"deep": [1,\n'  # 7
        "      2]}\n"  # 8
        "  },\n"  # 9
        '  "limits": {"max_tokens": 10}\n'  # 10
        "}\n"
    )
    table = parse_json(text)
    assert table.line == 1
    assert table.lines == {"loop": 2, "limits": 10}
    loop = table["loop"]
    assert loop.line == 3
    assert loop.lines == {"max_steps": 4, "last_turn": 5, "inner": 7}
    assert loop["inner"].lines == {"deep": 7}
    assert table["limits"].line == 10
    assert table["limits"].lines == {"max_tokens": 10}


def test_json_tables_inside_arrays_know_their_lines() -> None:
    """A mapping inside an array is a Table with its own line and key lines."""
    table = parse_json('{"steps": [\n  {"a": 1},\n  {\n    "b": 2\n  }\n]}')
    first, second = table["steps"]
    assert (first.line, first.lines) == (2, {"a": 2})
    assert (second.line, second.lines) == (3, {"b": 4})


def test_json_duplicate_key_names_the_key_and_its_second_line() -> None:
    """A key given twice in one object is an error at the line of the second one."""
    with pytest.raises(ParseError) as caught:
        parse_json('{\n  "a": 1,\n  "b": 2,\n  "a": 3\n}')
    assert "'a'" in caught.value.message
    assert "duplicate" in caught.value.message
    assert caught.value.line == 4


def test_json_duplicate_key_in_a_nested_object_is_refused() -> None:
    """Duplicates are found in nested objects too, not only at the top."""
    with pytest.raises(ParseError) as caught:
        parse_json('{"loop": {"max_steps": 1,\n\n "max_steps": 2}}')
    assert "'max_steps'" in caught.value.message
    assert caught.value.line == 3


def test_json_same_key_in_different_objects_is_fine() -> None:
    """A key repeated in sibling objects is not a duplicate."""
    table = parse_json('{"a": {"x": 1}, "b": {"x": 2}}')
    assert table == {"a": {"x": 1}, "b": {"x": 2}}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_non_finite_constants_are_refused(constant: str) -> None:
    """NaN and the infinities that Python's json accepts are unusable values, kept as written."""
    value = parse_json(f'{{"a": [1, {constant}]}}')["a"][1]
    assert value == Unusable(constant, "not a JSON number", "JSON has no NaN or Infinity")


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e999"])
def test_json_numbers_past_any_float_are_refused_as_written(number: str) -> None:
    """1e400 does not become infinity: it stays out of range, in the file's own text."""
    value = parse_json(f'{{"a": {number}}}')["a"]
    assert value == Unusable(number, "out of range", "beyond the largest float")


@pytest.mark.parametrize("text", ["[1, 2]", '"text"', "5", "null", "true"])
def test_json_top_level_must_be_an_object(text: str) -> None:
    """A document that is not an object is refused at line 1."""
    with pytest.raises(ParseError, match="the top level must be a JSON object") as caught:
        parse_json(text)
    assert caught.value.line == 1


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{\n  "a": 1,\n  "b": 2,,\n}', 3),
        ('{\n  "a": 1\n  "b": 2\n}', 3),
        ("{\n  \"a\": 'x'\n}", 2),
        ('{"a": 1', 1),
        ("", 1),
    ],
)
def test_json_invalid_text_gives_its_line(text: str, line: int) -> None:
    """A syntax error is a ParseError with the line it was found on."""
    with pytest.raises(ParseError, match=r"^invalid JSON: ") as caught:
        parse_json(text)
    assert caught.value.line == line


def test_json_nesting_up_to_max_depth_is_accepted() -> None:
    """Objects nested exactly MAX_DEPTH deep parse."""
    text = '{"a": ' * (MAX_DEPTH - 1) + "{}" + "}" * (MAX_DEPTH - 1)
    table = parse_json(text)
    for _ in range(MAX_DEPTH - 1):
        table = table["a"]
    assert table == {}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ' * MAX_DEPTH + "{}" + "}" * MAX_DEPTH,
        '{"a": [' * MAX_DEPTH + "{}" + "]}" * MAX_DEPTH,
    ],
    ids=["objects", "objects-in-arrays"],
)
def test_json_nesting_deeper_than_max_depth_is_refused(text: str) -> None:
    """One object more than MAX_DEPTH is a ParseError naming the limit."""
    with pytest.raises(ParseError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json(text)


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["top-level-arrays", "arrays-in-an-object"],
)
def test_json_very_deep_arrays_are_a_parse_error_not_a_recursion_error(text: str) -> None:
    """Arrays count toward the depth limit too, long before Python's recursion limit."""
    with pytest.raises(ParseError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json(text)


@pytest.mark.parametrize("digits", [1001, 5000])
def test_json_integer_with_too_many_digits_is_an_unusable_value(digits: int) -> None:
    """An integer past any field's range, even past Python's 4300-digit limit, is one bad value."""
    value = parse_json('{"a": ' + "1" * digits + ', "b": 2}')
    assert value["a"] == Unusable("1" * 24 + "…", "out of range", "too many digits to read")
    assert value["b"] == 2


def test_json_long_integers_within_the_limit_parse() -> None:
    """An integer of 1000 digits is still read exactly (and left to its field to judge)."""
    assert parse_json('{"a": ' + "9" * 1000 + "}")["a"] == 10**1000 - 1


# --- TOML ----------------------------------------------------------------------------------


def test_toml_header_section_lines() -> None:
    """A [section]'s line is its header; its keys have their own lines."""
    text = (
        "# comment\n"  # 1
        "name = 'x'\n"  # 2
        "\n"  # 3
        "[loop]\n"  # 4
        "max_steps = 5\n"  # 5
        "last_turn = 'wrap_up'\n"  # 6
        "\n"  # 7
        "[limits]\n"  # 8
        "max_tokens = [\n"  # 9
        "  1,\n"  # 10
        "]\n"  # 11
    )
    table = parse_toml(text)
    assert table == {
        "name": "x",
        "loop": {"max_steps": 5, "last_turn": "wrap_up"},
        "limits": {"max_tokens": [1]},
    }
    assert table.lines == {"name": 2, "loop": 4, "limits": 8}
    assert table["loop"].line == 4
    assert table["loop"].lines == {"max_steps": 5, "last_turn": 6}
    assert table["limits"].line == 8
    assert table["limits"].lines == {"max_tokens": 9}


def test_toml_dotted_keys_define_their_section_where_first_used() -> None:
    """With dotted keys the section's line is the first line that names it."""
    table = parse_toml("x = 1\n\nloop.max_steps = 5\nloop.last_turn = 'wrap_up'\n")
    assert table.lines == {"x": 1, "loop": 3}
    assert table["loop"].line == 3
    assert table["loop"].lines == {"max_steps": 3, "last_turn": 4}


def test_toml_inline_table_lines() -> None:
    """An inline table and all its keys are on the line it is written on."""
    table = parse_toml("x = 1\nloop = {max_steps = 5, last_turn = 'wrap_up'}\n")
    assert table == {"x": 1, "loop": {"max_steps": 5, "last_turn": "wrap_up"}}
    assert table.lines == {"x": 1, "loop": 2}
    assert table["loop"].line == 2
    assert table["loop"].lines == {"max_steps": 2, "last_turn": 2}


def test_toml_array_of_tables_lines() -> None:
    """Each [[step]] is a Table with its header's line and its keys' lines."""
    table = parse_toml("[[step]]\nname = 'a'\n\n[[step]]\nname = 'b'\n[step.loop]\nmax_steps = 3\n")
    first, second = table["step"]
    assert (first.line, first.lines) == (1, {"name": 2})
    assert (second.line, second.lines) == (4, {"name": 5, "loop": 6})
    assert second["loop"].lines == {"max_steps": 7}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a = 1\nb = = 2\n", 2),
        ("a = 1\n\na = 2\n", 3),
        ("[loop]\nx = 1\n[loop]\n", 3),
        ("a = {b = 1\n", 1),
        ("a = 1\nb = [1,\n2\nc = 3\n", 4),
    ],
)
def test_toml_invalid_text_gives_its_line(text: str, line: int) -> None:
    """Invalid TOML is a ParseError with the line, and the message keeps only the column."""
    with pytest.raises(ParseError, match=r"^invalid TOML: ") as caught:
        parse_toml(text)
    assert caught.value.line == line
    assert "at line" not in caught.value.message


@pytest.mark.parametrize("text", ["a = 1\nb = [1,\n2\n", 'a = """x\n\n'])
def test_toml_error_at_the_end_of_the_document_is_a_parse_error(text: str) -> None:
    """Text that stops in the middle of a value is invalid TOML, reported at the end."""
    with pytest.raises(ParseError, match=r"^invalid TOML: .*\(at end of document\)"):
        parse_toml(text)


def test_toml_hex_and_underscored_integers_are_integers() -> None:
    """TOML's 0x10 and 1_000 are the integers 16 and 1000."""
    table = parse_toml("a = 0x10\nb = 1_000\n")
    assert table == {"a": 16, "b": 1000}
    assert type(table["a"]) is int
    assert type(table["b"]) is int


def test_toml_very_deep_arrays_are_a_parse_error() -> None:
    """Arrays nested past Python's recursion limit are a ParseError, not RecursionError."""
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_toml("a = " + "[" * 100_000 + "]" * 100_000)


# --- YAML ----------------------------------------------------------------------------------


@pytest.fixture(params=["libyaml", "pure-python"])
def yaml_loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a YAML test with PyYAML's LibYAML loader and with its pure-Python fallback."""
    import yaml

    if request.param == "libyaml":
        if not hasattr(yaml, "CSafeLoader"):
            pytest.skip("PyYAML is built without LibYAML")
    else:
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    return str(request.param)


def _yaml_table(text: str) -> Table:
    """The YAML document ``text``, which must be a mapping at the top level."""
    table = parse_yaml(text)
    assert isinstance(table, Table)
    return table


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_block_lines() -> None:
    """Keys in block mappings have their own lines, even when the value is on the next line."""
    text = (
        "# settings\n"  # 1
        "name: x\n"  # 2
        "loop:\n"  # 3
        "  max_steps: 5\n"  # 4
        "  last_turn:\n"  # 5
        "    wrap_up\n"  # 6
        "  note: |\n"  # 7
        "    max_steps: 9\n"  # 8
        "limits:\n"  # 9
        "\n"  # 10
        "  max_tokens: 10\n"  # 11
    )
    table = _yaml_table(text)
    assert table == {
        "name": "x",
        "loop": {"max_steps": 5, "last_turn": "wrap_up", "note": "max_steps: 9\n"},
        "limits": {"max_tokens": 10},
    }
    assert table.line == 2
    assert table.lines == {"name": 2, "loop": 3, "limits": 9}
    assert table["loop"].line == 4
    assert table["loop"].lines == {"max_steps": 4, "last_turn": 5, "note": 7}
    assert table["limits"].line == 11
    assert table["limits"].lines == {"max_tokens": 11}


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_flow_lines() -> None:
    """Flow mappings, on one line or spread over several, keep each key's line."""
    table = _yaml_table(
        "loop: {max_steps: 5, last_turn: wrap_up}\nlimits: {\n  max_tokens:\n    10}\n"
    )
    assert table.lines == {"loop": 1, "limits": 2}
    assert table["loop"].line == 1
    assert table["loop"].lines == {"max_steps": 1, "last_turn": 1}
    assert table["limits"].line == 2
    assert table["limits"].lines == {"max_tokens": 3}


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_empty_value_is_none_on_its_keys_line() -> None:
    """A key with no value is None, located on its own line."""
    table = _yaml_table("a:\nb: 1\n")
    assert table == {"a": None, "b": 1}
    assert table.lines == {"a": 1, "b": 2}


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(
    "text",
    [
        'a: !!python/object/apply:os.system ["echo hi > executed"]\n',
        "a: !!python/object/apply:os.system\n  args: ['echo hi > executed']\n",
        "a: !!python/name:os.system\n",
        "a: !!python/object:os.system {}\n",
    ],
    ids=["apply-sequence", "apply-mapping", "name", "object"],
)
def test_yaml_python_tags_are_refused_and_never_run(
    text: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Only the safe subset is read: Python tags are a ParseError, and no command runs."""
    with pytest.raises(ParseError, match=r"only the safe subset of YAML is read") as caught:
        parse_yaml(text)
    assert caught.value.line == 1
    assert not Path("executed").exists()
    assert "hi" not in capfd.readouterr().out


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_duplicate_key_is_refused_at_its_second_line() -> None:
    """A key given twice in one mapping is an error at the line of the second one."""
    with pytest.raises(ParseError, match="duplicate key 'max_steps'") as caught:
        parse_yaml("loop:\n  max_steps: 1\n  other: 2\n  max_steps: 3\n")
    assert caught.value.line == 4


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_merge_key_explicit_keys_win_and_lines_are_kept() -> None:
    """<<: *base copies the base's keys with their lines; the mapping's own keys win."""
    text = (
        "base: &base\n"  # 1
        "  max_steps: 5\n"  # 2
        "  last_turn: wrap_up\n"  # 3
        "loop:\n"  # 4
        "  max_steps: 9\n"  # 5
        "  <<: *base\n"  # 6
        "  extra: 1\n"  # 7
    )
    table = _yaml_table(text)
    assert table["loop"] == {"max_steps": 9, "last_turn": "wrap_up", "extra": 1}
    assert table["loop"].lines == {"max_steps": 5, "last_turn": 3, "extra": 7}
    assert table["base"] == {"max_steps": 5, "last_turn": "wrap_up"}


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_merge_of_several_mappings_the_first_wins() -> None:
    """<<: [*a, *b] takes a key from the first mapping that has it."""
    table = _yaml_table("a: &a {x: 1}\nb: &b {x: 2, y: 3}\nc:\n  <<: [*a, *b]\n")
    assert table["c"] == {"x": 1, "y": 3}
    assert table["c"].lines == {"x": 1, "y": 2}


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_merge_of_a_non_mapping_is_refused() -> None:
    """A merge key whose value is not a mapping is an error at that value's line."""
    with pytest.raises(ParseError, match="merge key") as caught:
        parse_yaml("a: &a [1, 2]\nb:\n  <<: *a\n")
    assert caught.value.line == 1


def _billion_laughs() -> str:
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(rows) + "\n"


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_billion_laughs_is_refused() -> None:
    """Nine levels of nine-fold aliases (387 million values) stop at MAX_ALIAS_EXPANSION."""
    with pytest.raises(ParseError) as caught:
        parse_yaml(_billion_laughs())
    assert caught.value.message == f"aliases expand to more than {MAX_ALIAS_EXPANSION} values"


@pytest.mark.usefixtures("yaml_loader")
def test_a_long_document_without_aliases_is_not_an_alias_bomb() -> None:
    """Only alias expansion is bounded: a list of 30,000 items, each written out, is read."""
    table = _yaml_table("agents:\n" + "".join(f"  - {i}\n" for i in range(30_000)))
    assert len(table["agents"]) == 30_000


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_few_aliases_are_fine() -> None:
    """Aliases that expand to a small tree are read normally."""
    table = _yaml_table("a: &a [1, 2]\nb: [*a, *a]\n")
    assert table == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n"])
def test_yaml_empty_document_is_an_empty_table(text: str) -> None:
    """A document with no content is an empty Table."""
    table = parse_yaml(text)
    assert isinstance(table, Table)
    assert table == {}
    assert table.lines == {}


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("text", ["---\n", "---\n# everything commented out\n...\n"])
def test_yaml_explicit_empty_document_is_an_empty_table(text: str) -> None:
    """A document that is only a start marker (and comments) is empty too, like an empty file."""
    table = parse_yaml(text)
    assert isinstance(table, Table)
    assert table == {}


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(("text", "line"), [("just text\n", 1), ("# c\n\n5\n", 3)])
def test_yaml_top_level_must_be_a_mapping_or_a_list(text: str, line: int) -> None:
    """A scalar at the top level is an error at the line where it starts."""
    with pytest.raises(ParseError, match="the top level must be a YAML mapping or list") as caught:
        parse_yaml(text)
    assert caught.value.line == line


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [("- 1\n- 2\n", 1, [1, 2]), ("# c\n\n- a: 1\n  b: 2\n", 3, [{"a": 1, "b": 2}])],
)
def test_yaml_top_level_list_knows_its_line(text: str, line: int, expected: list[object]) -> None:
    """A list at the top level (a workflow that is a list of steps) is read with its line."""
    items = parse_yaml(text)
    assert isinstance(items, Items)
    assert (items, items.line) == (expected, line)


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(
    ("text", "line"),
    [("a: [1\n", 2), ("a: 1\n b: 2\n", 2), ("a: 1\n---\nb: 2\n", 2), ("a: 'open\n", 2)],
)
def test_yaml_invalid_text_gives_its_line(text: str, line: int) -> None:
    """Invalid YAML is a ParseError with the line the parser stopped on."""
    with pytest.raises(ParseError, match=r"^invalid YAML: ") as caught:
        parse_yaml(text)
    assert caught.value.line == line


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000])
def test_yaml_deep_nesting_is_a_parse_error(depth: int) -> None:
    """Sequences nested deeper than MAX_DEPTH, or past the recursion limit, are a ParseError."""
    with pytest.raises(ParseError):
        parse_yaml("a: " + "[" * depth + "]" * depth + "\n")


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(
    ("text", "yaml11", "yaml12"),
    [
        ("010", "8", "10"),
        ("0b11", "3", '"0b11"'),
        ("1_000", "1000", '"1_000"'),
        ("1:30", "90", '"1:30"'),
        ("-0x10", "-16", '"-0x10"'),
        ("on", "true", '"on"'),
        ("yes", "true", '"yes"'),
        ("Off", "false", '"Off"'),
        ("1e3", '"1e3"', "1000.0"),
        ("0o17", '"0o17"', "15"),
    ],
)
def test_yaml_plain_scalars_read_differently_by_1_1_and_1_2_are_ambiguous(
    text: str, yaml11: str, yaml12: str
) -> None:
    """A plain scalar whose YAML 1.1 and 1.2 readings differ is Unusable, naming both readings."""
    table = _yaml_table(f"loop:\n  max_steps: {text}\n")
    value = table["loop"]["max_steps"]
    assert isinstance(value, Unusable)
    assert value.text == text
    assert value.what == "ambiguous in YAML"
    assert value.hint == f"YAML 1.1 reads {yaml11}, YAML 1.2 reads {yaml12}; write the one you mean"
    assert table["loop"].lines == {"max_steps": 2}


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("digits", [1001, 5000])
def test_yaml_integer_with_too_many_digits_is_out_of_range_not_ambiguous(digits: int) -> None:
    """An integer both YAML versions read as one, past any field's range (and even past
    Python's 4300-digit limit), is one bad value, as in JSON: not a question of versions."""
    value = _yaml_table(f"a: {'1' * digits}\nb: 2\n")
    assert value["a"] == Unusable("1" * 24 + "…", "out of range", "too many digits to read")
    assert value["b"] == 2


@pytest.mark.usefixtures("yaml_loader")
def test_an_explicit_tag_settles_what_a_scalar_is() -> None:
    """!!str 010 is the text "010" and !!int 10 is 10: a tag leaves nothing ambiguous."""
    table = _yaml_table("a: !!str 010\nb: !!int 10\nc: !!str on\n")
    assert (table["a"], table["b"], table["c"]) == ("010", 10, "on")


@pytest.mark.usefixtures("yaml_loader")
def test_forms_both_versions_read_alike_are_accepted_even_when_unusual() -> None:
    """07 is 7 in YAML 1.1 (octal) and 1.2 (decimal) alike, so it is not ambiguous."""
    assert _yaml_table("a: 07\n")["a"] == 7


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_ambiguous_markers_inside_lists() -> None:
    """Unusable scalars are found inside sequences too."""
    items = _yaml_table("a: [010, 10, on]\n")["a"]
    assert isinstance(items[0], Unusable)
    assert items[1] == 10
    assert isinstance(items[2], Unusable)


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10", 10),
        ("0x10", 16),
        ("-5", -5),
        ("0", 0),
        ("1.5", 1.5),
        ("1.0e+3", 1000.0),
        (".inf", math.inf),
        ("-.inf", -math.inf),
        ("true", True),
        ("False", False),
        ('"010"', "010"),
        ("'on'", "on"),
        ("'1e3'", "1e3"),
        ("wrap_up", "wrap_up"),
    ],
)
def test_yaml_scalars_read_alike_by_1_1_and_1_2_are_plain_values(
    text: str, expected: object
) -> None:
    """Scalars both YAML versions agree on, and quoted ones, are ordinary typed values."""
    value = _yaml_table(f"a: {text}\n")["a"]
    assert not isinstance(value, Unusable)
    assert value == expected
    assert type(value) is type(expected)


def test_an_integer_past_the_digit_limit_is_read_as_an_unusable_value() -> None:
    """TOML's 0x with 5,000 digits parses (hex has no digit limit); its offer is unusable."""
    value = parse_toml("[loop]\nmax_steps = 0x" + "f" * 5000 + "\n")["loop"]["max_steps"]
    unusable = readable(value)
    assert isinstance(unusable, Unusable)
    assert (unusable.what, unusable.hint) == ("out of range", "too many digits to read")
    assert unusable.text == "398027684033796659235430…"  # 16**5000 - 1, its first 24 digits
    assert readable(-value) == Unusable("-398027684033796659235430…", "out of range", unusable.hint)
    assert readable(2**63) == 2**63  # long, but not past what is read: judged by its field


def test_toml_decimal_integer_past_the_digit_limit_is_a_parse_error() -> None:
    """tomllib refuses 5,000 decimal digits; the error says so without Python's advice."""
    with pytest.raises(ParseError) as caught:
        parse_toml("[loop]\nmax_steps = " + "9" * 5000 + "\n")
    assert caught.value.message == "invalid TOML: an integer with too many digits to read"


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_nan_is_read_alike_by_both_versions() -> None:
    """.nan is not-a-number in YAML 1.1 and 1.2 alike: a float, not an ambiguous value."""
    value = _yaml_table("a: .nan\n")["a"]
    assert type(value) is float
    assert math.isnan(value)


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_plain_text_past_a_thousand_characters_is_that_text() -> None:
    """A plain scalar longer than any field's range is kept as its text, not flagged."""
    text = "word" * 300
    assert _yaml_table(f"a: {text}\n")["a"] == text


@pytest.mark.usefixtures("yaml_loader")
def test_yaml_mapping_key_that_is_a_collection_is_refused_at_its_line() -> None:
    """A complex key (? [a, b]) is no field name: a parse error on the key's line."""
    with pytest.raises(ParseError) as caught:
        parse_yaml("loop:\n  max_steps: 3\n? [a, b]\n: 1\n")
    assert (caught.value.message, caught.value.line) == ("a mapping key must be a plain value", 3)
