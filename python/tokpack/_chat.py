"""Conversations to training records: the text a chat template renders, and the
character spans of it that carry loss.

The text is rendered exactly as ``transformers``' ``apply_chat_template(messages,
tokenize=False)`` renders it: the same Jinja sandbox, filters, globals and
inputs (see ``_environment`` and ``_template_inputs``, which follow
transformers/utils/chat_template_utils.py and tokenization_utils_base.py of
transformers 5). transformers is not imported; jinja2 is, lazily.

Spans are half-open ``[start, end)`` ranges of Python ``str`` indices (Unicode
code points) of the rendered text, sorted and disjoint, as the core's
``{"text", "loss_spans"}`` records take them. How a turn's span is found:

1. Prefix renders. For assistant message k, ``A = render(messages[:k],
   add_generation_prompt=True)`` and ``B = render(messages[:k+1])``. When B
   starts with A and the full render F starts with B, the turn is
   ``F[len(A):len(B)]``: what a model writes after the generation prompt.
2. Otherwise (templates that render a turn differently when later messages
   follow: Qwen3 drops earlier reasoning, R1 puts ``<think>\\n`` only in the
   generation prompt), the turn is located in F: it starts after the part
   of the generation prompt that F shares, and ends after the first
   end-of-turn marker (learnt from a probe conversation) that follows its
   content, which must come before the next message's content.
3. Whitespace at the end of a span (the newline after ``<|im_end|>`` or
   ``<end_of_turn>``) is cut off: the span ends with the end-of-turn token.
4. With ``reasoning_loss=False`` the reasoning block (opening tag, reasoning,
   closing tag and the whitespace after it) is cut from the span's start.

Each span is checked (inside the text, sorted, disjoint, holding the
message's content); anything that cannot be placed reliably raises
``ChatTemplateError`` naming the template and the message.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = ["ChatTemplate", "ChatTemplateError", "chat_records", "render_chat"]

LOSS_MODES = ("assistant", "last_assistant", "all")

# The file names transformers 5 reads (transformers/utils/hub.py).
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
LEGACY_PROCESSOR_CHAT_TEMPLATE_FILE = "chat_template.json"

# PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES
SPECIAL_TOKENS_ATTRIBUTES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                             "cls_token", "mask_token")

# Names a message's reasoning comes under; the first is what templates read.
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")

# Private-use sentinels for probes; a conversation holding them is refused
# where a probe is needed.
_S_ANSWER = "\U000f1a01"
_S_REASON = "\U000f1a02"
_S_USER = "\U000f1a03"


class ChatTemplateError(ValueError):
    """A template that cannot render a conversation, or a turn whose loss span
    cannot be placed reliably in the rendered text."""


# --------------------------------------------------------------------------
# The Jinja environment: transformers' _cached_compile_jinja_template.

def _jinja():
    try:
        import jinja2
        import jinja2.exceptions
        import jinja2.ext
        import jinja2.nodes
        import jinja2.sandbox
        import jinja2.utils
    except ImportError as e:
        raise ImportError("tokpack's chat templates need jinja2: pip install jinja2 "
                          "(or pip install 'tokpack[chat]')") from e
    parts = tuple(int(p) for p in jinja2.__version__.split(".")[:3] if p.isdigit())
    if parts < (3, 1, 6):
        # As transformers: older versions have known sandbox escapes, and chat
        # templates from the Hub are untrusted code.
        raise ImportError(f"tokpack's chat templates need jinja2>=3.1.6, found {jinja2.__version__}: "
                          "pip install -U jinja2")
    return jinja2


_ENV = None


def _environment():
    global _ENV
    if _ENV is not None:
        return _ENV
    jinja2 = _jinja()

    class GenerationTag(jinja2.ext.Extension):
        # transformers' AssistantTracker: `{% generation %}...{% endgeneration %}`
        # renders its body (the tracking it adds is not used here).
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation"), [], [], body).set_lineno(lineno)

        def _generation(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' filter: no HTML escaping, json.dumps' options.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    "Chat templates cannot store underscore-prefixed attributes on a namespace, "
                    f"but got {name!r}. Please rename the attribute.")

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    _ENV = env
    return env


# --------------------------------------------------------------------------
# Inputs as transformers hands them to the template.

def _objects_to_dicts(value):
    # transformers' _message_objects_to_dicts
    if isinstance(value, Mapping):
        return {k: _objects_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_objects_to_dicts(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_objects_to_dicts(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _objects_to_dicts(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _objects_to_dicts(value.model_dump())
    return value


def _plain(value):
    # transformers' _plain_template_data: only JSON-like types reach the sandbox.
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _normalize_messages(messages) -> List[dict]:
    """transformers' _normalize_chat_messages, _plain_template_data and
    _alias_reasoning_fields, in that order."""
    messages = _objects_to_dicts(getattr(messages, "messages", messages))
    if not isinstance(messages, (list, tuple)):
        raise TypeError(f"a conversation is a list of messages, got {type(messages).__name__}")
    out = []
    for message in messages:
        if not isinstance(message, dict):
            raise TypeError(f"Chat messages should be dicts, dataclasses or pydantic models, but got {message!r}.")
        message = _plain({k: v for k, v in message.items() if v is not None})
        reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def _tool_schemas(tools):
    if tools is None:
        return None
    schemas = []
    for tool in tools:
        if isinstance(tool, dict):
            schemas.append(tool)
        elif callable(tool):
            raise TypeError(
                "tokpack takes tools as JSON schema dicts only; convert a Python function with "
                "transformers.utils.get_json_schema(fn) first")
        else:
            raise ValueError("Tools should either be a JSON schema, or a callable function with type hints "
                             "and a docstring suitable for auto-conversion to a schema.")
    return _plain(schemas)


def _token_content(value):
    # A token in a config: a string, or an AddedToken written as a dict.
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def special_tokens_from_config(config: Mapping, special_tokens_map: Optional[Mapping] = None) -> Dict[str, str]:
    """The named special tokens transformers passes to a template
    (``tokenizer.special_tokens_map``), from a tokenizer_config.json's dict:
    bos/eos/unk/sep/pad/cls/mask_token, other ``*_token`` string entries and
    a dict ``extra_special_tokens`` (transformers 5's model-specific tokens).
    ``special_tokens_map`` (special_tokens_map.json) is merged as
    transformers does: only when the config has no ``added_tokens_decoder``."""
    config = dict(config)
    if special_tokens_map and "added_tokens_decoder" not in config:
        for key, value in special_tokens_map.items():
            config[key] = value
    out: Dict[str, str] = {}
    for key, value in config.items():
        if not key.endswith("_token"):
            continue
        if key in SPECIAL_TOKENS_ATTRIBUTES:
            token = _token_content(value)
        elif isinstance(value, str) or (isinstance(value, dict) and value.get("__type") == "AddedToken"):
            token = _token_content(value)
        else:
            token = None
        if token is not None:
            out[key] = token
    extra = config.get("extra_special_tokens")
    if isinstance(extra, dict):
        for key, value in extra.items():
            token = _token_content(value)
            if token is not None:
                out[key] = token
    return out


# --------------------------------------------------------------------------
# Templates

class ChatTemplate:
    """A chat template (or a set of named ones, as a tokenizer holds them) and
    the special tokens it sees.

    ``ChatTemplate.load(source)`` reads a model directory, a
    tokenizer_config.json, a chat_template.json, a ``.jinja`` file or takes
    template text; ``ChatTemplate(text_or_dict, special_tokens={...})``
    builds one directly. ``render`` equals transformers'
    ``apply_chat_template(..., tokenize=False)``.
    """

    def __init__(self, template: Union[str, Mapping[str, str]], *,
                 special_tokens: Optional[Mapping[str, str]] = None, name: Optional[str] = None):
        if isinstance(template, Mapping):
            if not template:
                raise ChatTemplateError("no chat templates given")
            self.templates: Union[str, Dict[str, str]] = dict(template)
        elif isinstance(template, str):
            self.templates = template
        else:
            raise TypeError(f"a chat template is a str or a dict of named str, got {type(template).__name__}")
        self.special_tokens: Dict[str, str] = dict(special_tokens or {})
        self.name = name or "<chat template>"
        self._compiled: Dict[str, Any] = {}
        self._probe_cache: Dict[Any, Any] = {}

    def __repr__(self):
        names = sorted(self.templates) if isinstance(self.templates, dict) else None
        return f"ChatTemplate({self.name!r}" + (f", templates={names}" if names else "") + ")"

    # ---- loading

    @classmethod
    def load(cls, source: Union[str, os.PathLike], *, template_name: Optional[str] = None,
             special_tokens: Optional[Mapping[str, str]] = None) -> "ChatTemplate":
        """A template from ``source``:

        - a directory, read as ``AutoTokenizer.from_pretrained(dir)`` reads it:
          ``chat_template.jinja`` (the default) and
          ``additional_chat_templates/*.jinja`` (named) when present, else
          tokenizer_config.json's ``chat_template``; special tokens from
          tokenizer_config.json (and a legacy special_tokens_map.json). A
          directory whose tokenizer has no template but that holds a
          processor's legacy ``chat_template.json`` uses that one.
        - a ``.json`` file: a tokenizer_config.json or chat_template.json
          (its ``chat_template``: a string or a list of
          ``{"name", "template"}``), special tokens from the same file;
        - another file: the template's text (a ``.jinja`` file);
        - a string that is not a path and contains ``{{`` or ``{%``: the text.

        ``template_name`` picks one of several named templates (else it is
        chosen per call as transformers does: ``tool_use`` when tools are
        given and it exists, else ``default``). ``special_tokens`` override
        the loaded ones."""
        source_s = os.fspath(source)
        path = Path(source_s)
        tokens: Dict[str, str] = {}
        is_path = False
        try:
            is_path = path.exists()
        except (OSError, ValueError):
            is_path = False
        if is_path and path.is_dir():
            templates, tokens = _load_directory(path)
        elif is_path and path.suffix == ".json":
            templates, tokens = _load_json_file(path)
        elif is_path:
            templates = path.read_text(encoding="utf-8")
        elif "{{" in source_s or "{%" in source_s:
            templates = source_s
            source_s = "<template string>"
        else:
            raise FileNotFoundError(f"chat template {source_s!r}: no such file or directory")
        tokens.update(special_tokens or {})
        out = cls(templates, special_tokens=tokens, name=source_s)
        if template_name is not None:
            out = cls(out.select(template_name), special_tokens=tokens, name=f"{source_s}[{template_name}]")
        return out

    def select(self, template_name: Optional[str] = None, tools=None) -> str:
        """The template text used for a call: transformers'
        ``get_chat_template(template_name, tools)``."""
        if isinstance(self.templates, dict):
            if template_name is not None and template_name in self.templates:
                return self.templates[template_name]
            if template_name is None:
                if tools is not None and "tool_use" in self.templates:
                    return self.templates["tool_use"]
                if "default" in self.templates:
                    return self.templates["default"]
                raise ChatTemplateError(
                    f"{self.name} has several chat templates and none named 'default'; pick one "
                    f"by name: {sorted(self.templates)}")
            return template_name  # as transformers: an unknown name is template text
        return self.templates if template_name is None else template_name

    def _template(self, text: str):
        compiled = self._compiled.get(text)
        if compiled is None:
            env = _environment()
            jinja2 = _jinja()
            try:
                compiled = env.from_string(text)
            except jinja2.TemplateSyntaxError as e:
                raise ChatTemplateError(f"{self.name}: template syntax error, line {e.lineno}: {e.message}") from e
            self._compiled[text] = compiled
        return compiled

    # ---- rendering

    def render(self, messages, *, tools=None, documents=None, add_generation_prompt: bool = False,
               **template_kwargs) -> str:
        """The text of ``apply_chat_template(messages, tools=tools,
        documents=documents, add_generation_prompt=..., tokenize=False,
        **template_kwargs)`` for a tokenizer holding this template and these
        special tokens."""
        return self._render(_normalize_messages(messages), tools, documents, add_generation_prompt,
                            template_kwargs, None)

    def _render(self, messages: List[dict], tools, documents, add_generation_prompt, kwargs, now):
        if len(messages) == 0:
            raise ChatTemplateError("Cannot apply chat template to an empty conversation. "
                                    "Provide at least one message.")
        text = self.select(None, tools)
        template = self._template(text)
        schemas = _tool_schemas(tools)
        if documents is not None:
            for document in documents:
                if not isinstance(document, dict):
                    raise TypeError("Documents should be a list of dicts with 'title' and 'text' keys!")
        variables = _plain({**self.special_tokens, **kwargs})
        if now is not None and "strftime_now" not in variables:
            # One instant for every render of one conversation, so that a
            # date header cannot change between them.
            variables["strftime_now"] = lambda format: now.strftime(format)
        jinja2 = _jinja()
        try:
            return template.render(messages=messages, tools=schemas, documents=_plain(documents),
                                   add_generation_prompt=add_generation_prompt, **variables)
        except jinja2.TemplateError as e:
            raise ChatTemplateError(f"{self.name}: {e}") from e
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # A template's own failure on these messages (e.g. str + list).
            raise ChatTemplateError(f"{self.name}: {type(e).__name__}: {e}") from e

    # ---- the end-of-turn marker and reasoning delimiters, from a probe

    def _probe(self, tools, kwargs, now):
        key = json.dumps([kwargs, tools], sort_keys=True, default=str)
        if key in self._probe_cache:
            return self._probe_cache[key]
        result = None
        try:
            user = {"role": "user", "content": _S_USER}
            plain = [user, {"role": "assistant", "content": _S_ANSWER}]
            b = self._render(_normalize_messages(plain), tools, None, False, kwargs, now)
            if b.count(_S_ANSWER) == 1:
                footer = b[b.index(_S_ANSWER) + 1:]
                result = {"footer": footer, "reasoning": None}
                thought = [user, {"role": "assistant", "content": _S_ANSWER, "reasoning_content": _S_REASON}]
                c = self._render(_normalize_messages(thought), tools, None, False, kwargs, now)
                if c.count(_S_REASON) == 1 and c.count(_S_ANSWER) == 1 and \
                        c.index(_S_REASON) < c.index(_S_ANSWER):
                    result["reasoning"] = c[c.index(_S_REASON) + 1:c.index(_S_ANSWER)]
        except (ChatTemplateError, TypeError, ValueError):
            result = None
        self._probe_cache[key] = result
        return result


def _read_json(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _templates_from_value(value, where):
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        try:
            return {t["name"]: t["template"] for t in value}
        except (TypeError, KeyError) as e:
            raise ChatTemplateError(f"{where}: chat_template is a list but not of "
                                    "{{'name': ..., 'template': ...}}") from e
    if isinstance(value, dict):
        return dict(value)
    raise ChatTemplateError(f"{where}: chat_template is {type(value).__name__}, not a string or a list")


def _load_json_file(path: Path):
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ChatTemplateError(f"{path}: not a JSON object")
    if data.get("chat_template") is None:
        hint = ""
        if (path.parent / CHAT_TEMPLATE_FILE).exists():
            hint = f" (its directory has {CHAT_TEMPLATE_FILE}: pass the directory)"
        raise ChatTemplateError(f"{path}: no chat_template{hint}")
    templates = _templates_from_value(data["chat_template"], str(path))
    tokens = special_tokens_from_config(data) if path.name != LEGACY_PROCESSOR_CHAT_TEMPLATE_FILE else {}
    return templates, tokens


def _load_directory(path: Path):
    config_path = path / TOKENIZER_CONFIG_FILE
    config = _read_json(config_path) if config_path.exists() else {}
    stmap_path = path / SPECIAL_TOKENS_MAP_FILE
    stmap = _read_json(stmap_path) if stmap_path.exists() else None
    tokens = special_tokens_from_config(config, stmap)
    # tokenization_utils_base._from_pretrained: template files take priority
    # over the config's entry.
    files: Dict[str, str] = {}
    if (path / CHAT_TEMPLATE_FILE).is_file():
        files["default"] = (path / CHAT_TEMPLATE_FILE).read_text(encoding="utf-8")
    extra_dir = path / CHAT_TEMPLATE_DIR
    if extra_dir.is_dir():
        for f in sorted(extra_dir.glob("*.jinja")):
            files[f.name[:-len(".jinja")]] = f.read_text(encoding="utf-8")
    if len(files) == 1 and "default" in files:
        return files["default"], tokens
    if files:
        return files, tokens
    if config.get("chat_template") is not None:
        return _templates_from_value(config["chat_template"], str(config_path)), tokens
    legacy = path / LEGACY_PROCESSOR_CHAT_TEMPLATE_FILE
    if legacy.is_file():
        data = _read_json(legacy)
        if isinstance(data, dict) and data.get("chat_template") is not None:
            return _templates_from_value(data["chat_template"], str(legacy)), tokens
    raise ChatTemplateError(f"{path}: no chat template ({CHAT_TEMPLATE_FILE}, {CHAT_TEMPLATE_DIR}/, "
                            f"{TOKENIZER_CONFIG_FILE}'s chat_template or {LEGACY_PROCESSOR_CHAT_TEMPLATE_FILE})")


def _as_template(template) -> ChatTemplate:
    if isinstance(template, ChatTemplate):
        return template
    if isinstance(template, (str, os.PathLike)):
        return ChatTemplate.load(template)
    raise TypeError(f"template: a ChatTemplate, a path or template text, got {type(template).__name__}")


# --------------------------------------------------------------------------
# Spans

def _lcp(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _text_parts(content) -> List[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, (list, tuple)):
        return [p["text"] for p in content
                if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str)]
    return []


def _answer_and_reasoning(message: dict) -> Tuple[List[str], Optional[str]]:
    """The message's answer text parts (with a ``<think>...</think>`` prefix
    taken off a string content) and its reasoning."""
    parts = _text_parts(message.get("content"))
    reasoning = message.get("reasoning_content")
    if isinstance(message.get("content"), str) and "</think>" in message["content"]:
        head, _, tail = message["content"].partition("</think>")
        parts = [tail]
        if not isinstance(reasoning, str):
            reasoning = head.split("<think>")[-1]
    return parts, reasoning if isinstance(reasoning, str) else None


def _describe(k: int) -> str:
    return f"messages[{k}] (an assistant turn)"


def render_chat(messages, template, *, loss: str = "assistant", reasoning_loss: bool = True,
                tools=None, documents=None, **template_kwargs) -> Tuple[str, List[List[int]]]:
    """Renders ``messages`` with ``template`` (a ChatTemplate, a path or
    template text) as transformers' ``apply_chat_template(messages,
    tokenize=False, tools=tools, **template_kwargs)`` does, and returns
    ``(text, spans)``: the ``[start, end)`` character ranges of ``text`` that
    carry loss.

    ``loss``: ``"assistant"`` (every assistant turn: what the model writes
    after the generation prompt, through its end-of-turn token),
    ``"last_assistant"`` (only the last one) or ``"all"`` (the whole text).
    ``reasoning_loss=False`` takes the reasoning block (``<think>...</think>``
    and the whitespace after it) out of the assistant spans.
    Raises ChatTemplateError when a span cannot be placed reliably."""
    if loss not in LOSS_MODES:
        raise ValueError(f"loss must be one of {LOSS_MODES}, got {loss!r}")
    tpl = _as_template(template)
    msgs = _normalize_messages(messages)
    now = datetime.now()
    full = tpl._render(msgs, tools, documents, False, template_kwargs, now)
    if loss == "all":
        return full, ([[0, len(full)]] if full else [])
    turns = [k for k, m in enumerate(msgs) if m.get("role") == "assistant"]
    if loss == "last_assistant":
        turns = turns[-1:]
    spans: List[List[int]] = []
    for k in turns:
        span = _turn_span(tpl, msgs, k, full, tools, documents, template_kwargs, now, reasoning_loss)
        if span is not None:
            spans.append(span)
    _check_spans(tpl, full, spans)
    return full, spans


def _turn_span(tpl: ChatTemplate, msgs, k, full, tools, documents, kwargs, now, reasoning_loss):
    render = lambda m, gen: tpl._render(m, tools, documents, gen, kwargs, now)  # noqa: E731
    where = f"{tpl.name}, {_describe(k)}"
    if k == 0:
        raise ChatTemplateError(f"{where}: a conversation cannot start with an assistant turn "
                                "(there is no prompt to render before it)")
    a = render(msgs[:k], True)
    b = render(msgs[:k + 1], False)
    if b.startswith(a) and full.startswith(b):
        start, end = len(a), len(b)
    else:
        start, end = _locate_turn(tpl, msgs, k, full, a, tools, documents, kwargs, now, where)
        if end <= start:
            raise ChatTemplateError(f"{where}: the turn's end was found before its start")
    # Whitespace after the end-of-turn token carries no loss.
    while end > start and full[end - 1].isspace():
        end -= 1
    answer, reasoning = _answer_and_reasoning(msgs[k])
    text = full[start:end]
    for part in answer:
        if part.strip() and part.strip() not in text:
            raise ChatTemplateError(
                f"{where}: the span found, {text!r}, does not hold the message's content "
                f"{part.strip()!r}; the template transforms the content in a way tokpack cannot map")
    if not reasoning_loss and reasoning is not None and reasoning.strip():
        start = _cut_reasoning(tpl, full, start, end, reasoning, answer, tools, kwargs, now, where)
    if start >= end:
        return None
    return [start, end]


def _locate_turn(tpl, msgs, k, full, a, tools, documents, kwargs, now, where):
    """A turn in a render that is not the prefix renders' extension (see the
    module's docstring, step 2)."""
    # Start: after the generation prompt; or, when the turn's own header is
    # shorter than the generation prompt (R1's "<think>\n" only in the
    # prompt), after the part of the prompt that the turn's header shares.
    # The header is learnt from the same conversation with this turn
    # replaced by one whose content is a sentinel (no reasoning, no tool
    # calls), so that no character of the real turn can extend the shared
    # part.
    if full.startswith(a):
        start = len(a)
    else:
        r = tpl._render(msgs[:k], tools, documents, False, kwargs, now)
        if not (a.startswith(r) and full.startswith(r)):
            raise ChatTemplateError(
                f"{where}: the template renders the messages before this turn differently depending on "
                "what follows them, so where the turn starts cannot be determined")
        try:
            h = tpl._render(msgs[:k] + [{"role": "assistant", "content": _S_ANSWER}] + msgs[k + 1:], tools,
                            documents, False, kwargs, now)
        except (ChatTemplateError, TypeError, ValueError) as e:
            raise ChatTemplateError(f"{where}: the generation prompt is not where the turn starts, and "
                                    f"a probe turn to learn the turn's header failed: {e}") from e
        if not h.startswith(r) or h.count(_S_ANSWER) != 1:
            raise ChatTemplateError(f"{where}: the generation prompt is not where the turn starts, and "
                                    "the turn's header could not be learnt")
        header = h[len(r):h.index(_S_ANSWER)]
        shared = a[len(r):len(r) + _lcp(a[len(r):], header)]
        if not full.startswith(shared, len(r)):
            raise ChatTemplateError(
                f"{where}: the turn's header {shared!r} (what the generation prompt and a turn without "
                "reasoning share) is not in the rendered text; e.g. enable_thinking=False with a message "
                "that has reasoning")
        start = len(r) + len(shared)
    b = tpl._render(msgs[:k + 1], tools, documents, False, kwargs, now)
    if full.startswith(b):
        return start, len(b)
    probe = tpl._probe(tools, kwargs, now)
    if probe is None or not probe["footer"].strip():
        raise ChatTemplateError(
            f"{where}: the template renders this turn differently when later messages follow it, and its "
            "end-of-turn marker could not be learnt from a probe conversation, so the turn's end "
            "cannot be placed")
    marker = probe["footer"].strip()
    # The first marker after the turn's content.
    answer, _ = _answer_and_reasoning(msgs[k])
    after = start
    for part in answer:
        p = part.strip()
        if p:
            i = full.find(p, after)
            if i < 0:
                raise ChatTemplateError(f"{where}: the message's content is not in the rendered text "
                                        "where the turn starts")
            after = i + len(p)
    i = full.find(marker, after)
    if i < 0:
        raise ChatTemplateError(f"{where}: no end-of-turn marker {marker!r} after the turn's content")
    end = i + len(marker)
    # It must come before the next message's content.
    bound = _next_content_bound(tpl, msgs, k, full, tools, documents, kwargs, now)
    if end > bound:
        raise ChatTemplateError(
            f"{where}: the end-of-turn marker {marker!r} that ends a final turn is not where this turn "
            "ends when later messages follow (the template ends turns differently), so the span "
            "cannot be placed")
    return start, end


def _next_content_bound(tpl, msgs, k, full, tools, documents, kwargs, now):
    """Where the rendered text first changes when a later message's text
    changes: a bound that the turn cannot cross."""
    for j in range(k + 1, len(msgs)):
        content = msgs[j].get("content")
        changed = dict(msgs[j])
        if isinstance(content, str) and content:
            changed["content"] = content + _S_USER
        elif isinstance(content, list) and _text_parts(content):
            parts = [dict(p) for p in content]
            for p in parts:
                if isinstance(p, dict) and isinstance(p.get("text"), str):
                    p["text"] = p["text"] + _S_USER
                    break
            changed["content"] = parts
        else:
            continue
        other = tpl._render(msgs[:j] + [changed] + msgs[j + 1:], tools, documents, False, kwargs, now)
        return _lcp(full, other)
    return len(full)


def _cut_reasoning(tpl, full, start, end, reasoning, answer, tools, kwargs, now, where):
    """The span's new start with the reasoning block cut off, or the old one
    when the template left the reasoning out of the text."""
    text = full[start:end]
    r = reasoning.strip()
    i = text.find(r)
    if i < 0:
        return start  # not rendered (e.g. earlier turns in Qwen3): no loss on it anyway
    probe = tpl._probe(tools, kwargs, now)
    delim = (probe or {}).get("reasoning")
    if not delim or not delim.strip():
        raise ChatTemplateError(
            f"{where}: reasoning_loss=False but the template's reasoning delimiter could not be learnt "
            "from a probe conversation")
    close = delim.strip()
    j = i + len(r)
    rest = text[j:]
    stripped = rest.lstrip()
    if not stripped.startswith(close):
        raise ChatTemplateError(f"{where}: reasoning_loss=False but the reasoning is not followed by "
                                f"{close!r} in the rendered turn")
    j += (len(rest) - len(stripped)) + len(close)
    while j < len(text) and text[j].isspace():
        j += 1
    for part in answer:
        p = part.strip()
        if p and p not in text[j:]:
            raise ChatTemplateError(f"{where}: reasoning_loss=False: the content does not follow the "
                                    "reasoning block; cannot cut the reasoning out")
    return start + j


def _check_spans(tpl, text, spans):
    last = 0
    for s, e in spans:
        if not (0 <= s < e <= len(text)) or s < last:
            raise ChatTemplateError(f"{tpl.name}: spans {spans} are not sorted, disjoint ranges "
                                    f"inside the text (length {len(text)})")
        last = e


# --------------------------------------------------------------------------
# Records

def chat_records(conversations: Iterable, template, *, loss: str = "assistant",
                 reasoning_loss: bool = True, tools=None, messages_key: str = "messages",
                 tools_key: Optional[str] = "tools", **template_kwargs) -> Iterator[Dict[str, Any]]:
    """Yields ``{"text": ..., "loss_spans": [[start, end], ...]}`` for each
    conversation: a list of messages, or a dict holding them under
    ``messages_key`` (and, when ``tools`` is None, its own tools under
    ``tools_key``). The records are what ``tokpack build`` takes for
    loss-masked data; see ``render_chat`` for the rules."""
    tpl = _as_template(template)
    for n, conversation in enumerate(conversations, 1):
        conv_tools = tools
        if isinstance(conversation, Mapping):
            if messages_key not in conversation:
                raise KeyError(f"conversation {n}: no {messages_key!r} key")
            if conv_tools is None and tools_key and conversation.get(tools_key) is not None:
                conv_tools = conversation[tools_key]
            messages = conversation[messages_key]
        else:
            messages = conversation
        try:
            text, spans = render_chat(messages, tpl, loss=loss, reasoning_loss=reasoning_loss,
                                      tools=conv_tools, **template_kwargs)
        except ChatTemplateError as e:
            raise ChatTemplateError(f"conversation {n}: {e}") from e
        yield {"text": text, "loss_spans": spans}
