#!/usr/bin/env python3
"""Writes src/sqs_waiter/contract.py, the client's types, from schema/contract.schema.json.

Every request and reply of the schema becomes a TypedDict (the functional form, since `from` is a
field name), every string enumeration a Literal, and `x-sqs-waiter` constants. `--check` writes
nothing and exits 1 when the committed module differs from what the schema gives, so a change of
the contract that the client misses fails `make test`. Standard library only.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA = HERE.parent.parent / "schema" / "contract.schema.json"
OUT = HERE / "src" / "sqs_waiter" / "contract.py"
PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def ref_name(ref: str) -> str:
    prefix = "#/$defs/"
    if not ref.startswith(prefix):
        raise ValueError(f"unsupported $ref {ref!r}")
    return ref[len(prefix) :]


class Generator:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.extra: dict[str, Any] = schema["x-sqs-waiter"]
        # Named inline objects (an untagged enum's variants), written before their user.
        self.inline: dict[str, dict[str, Any]] = {}
        self.blocks: dict[str, str] = {}
        self.deps: dict[str, set[str]] = {}

    def type_of(self, s: dict[str, Any], owner: str, hint: str) -> str:
        """The Python type of schema `s`, met inside the definition `owner`."""
        if "$ref" in s:
            name = ref_name(s["$ref"])
            self.deps[owner].add(name)
            return name
        if "const" in s:
            return f"Literal[{json.dumps(s['const'])}]"
        if "enum" in s:
            return f"Literal[{', '.join(json.dumps(v) for v in s['enum'])}]"
        for key in ("anyOf", "oneOf"):
            if key in s:
                return self.union([self.type_of(v, owner, f"{hint}{i}") for i, v in enumerate(s[key])])
        kinds = s.get("type", [])
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not kinds:
            raise ValueError(f"{owner}: a schema with no type: {s}")
        return self.union([self.single(kind, s, owner, hint) for kind in kinds])

    def single(self, kind: str, s: dict[str, Any], owner: str, hint: str) -> str:
        if kind == "array":
            return f"list[{self.type_of(s['items'], owner, hint)}]"
        if kind == "object" and is_record(s):
            name = f"{owner}{hint}"
            self.inline[name] = s
            self.deps[owner].add(name)
            return name
        if kind == "object":
            values = s.get("additionalProperties", True)
            return "dict[str, Any]" if values is True else f"dict[str, {self.type_of(values, owner, hint)}]"
        return PRIMITIVES[kind]

    @staticmethod
    def union(types: list[str]) -> str:
        literals = [t[len("Literal[") : -1] for t in types if t.startswith("Literal[")]
        others = [t for t in types if not t.startswith("Literal[")]
        merged = ([f"Literal[{', '.join(literals)}]"] if literals else []) + others
        out: list[str] = []
        for t in merged:
            if t not in out:
                out.append(t)
        return " | ".join(out)

    def define(self, name: str, s: dict[str, Any]) -> None:
        self.deps.setdefault(name, set())
        doc = summary(s.get("description", ""))
        comment = f"# {doc}\n" if doc else ""
        if is_record(s):
            required = set(s.get("required", []))
            fields = []
            for field, fs in s.get("properties", {}).items():
                t = self.type_of(fs, name, field.title().replace("_", ""))
                fields.append(f"        {json.dumps(field)}: {t if field in required else f'NotRequired[{t}]'},")
            body = "".join(f"{f}\n" for f in fields)
            self.blocks[name] = f'{comment}{name} = TypedDict(\n    "{name}",\n    {{\n{body}    }},\n)\n'
        else:
            self.blocks[name] = f"{comment}{name} = {self.type_of(s, name, 'Variant')}\n"

    def module(self) -> str:
        for name, s in self.defs.items():
            self.define(name, s)
        while set(self.inline) - set(self.blocks):
            for name in sorted(set(self.inline) - set(self.blocks)):
                self.define(name, self.inline[name])
        ordered: list[str] = []

        def visit(name: str) -> None:
            if name in ordered:
                return
            for dep in sorted(self.deps.get(name, ())):
                if dep != name:
                    visit(dep)
            ordered.append(name)

        for name in sorted(self.blocks):
            visit(name)
        extra = self.extra
        actions = ",\n".join(
            f'    ({json.dumps(f["action"])}, {json.dumps(f["request"])}, {json.dumps(f["reply"])})'
            for f in extra["actions"]
        )
        limits = "\n".join(f"{k.upper()}: Final = {v}" for k, v in extra["limits"].items())
        attributes = "\n".join(f"{k.upper()}_ATTRIBUTE: Final = {json.dumps(v)}" for k, v in extra["attributes"].items())
        attributes += f"\nRESERVED_ATTRIBUTE_PREFIX: Final = {json.dumps(extra['reserved_attribute_prefix'])}"
        error_types = ", ".join(json.dumps(t["name"]) for t in extra["error_types"])
        retryable = ", ".join(json.dumps(t["name"]) for t in extra["error_types"] if t["retryable"])
        return (
            "# Code generated by clients/python/generate.py from schema/contract.schema.json. DO NOT EDIT.\n"
            '"""The contract\'s requests and replies, as in schema/contract.schema.json."""\n\n'
            "from typing import Any, Final, Literal, NotRequired, TypedDict\n\n"
            f"{limits}\n{attributes}\n\n"
            f"#: Every errorType the function answers with.\nERROR_TYPES: Final = frozenset({{{error_types}}})\n"
            f"#: The errorTypes after which the same request may succeed.\nRETRYABLE_ERROR_TYPES: Final = frozenset({{{retryable}}})\n"
            f"#: (action, request type, reply type) of every request form the function reads.\nACTIONS: Final = (\n{actions},\n)\n\n"
            + "\n".join(self.blocks[n] for n in ordered)
        )


def is_record(s: dict[str, Any]) -> bool:
    """An object with named fields (or none at all), as opposed to a map."""
    return s.get("type") == "object" and ("properties" in s or s.get("additionalProperties") is False)


def summary(description: str) -> str:
    """The description's first paragraph, on one line, without Rust's code and link syntax."""
    first = description.split("\n\n")[0].replace("\n", " ").strip()
    return first.replace("[`", "`").replace("`]", "`")


def main() -> int:
    text = Generator(json.loads(SCHEMA.read_text())).module()
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(HERE)} differs from {SCHEMA.name}: run `make clients-types`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
