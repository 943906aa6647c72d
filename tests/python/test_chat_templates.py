"""Chat templates to loss-masked records (tokpack.render_chat, chat_records,
python -m tokpack.chat): the text equals transformers' apply_chat_template
for fixture templates in the styles of the major families, and the loss
spans are exactly the assistant turns. transformers runs only here, as the
reference; tokpack does not import it."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

tokpack = pytest.importorskip("tokpack")
pytest.importorskip("jinja2")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from tokpack import ChatTemplate, ChatTemplateError, chat_records, render_chat  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "chat_templates"
DATE = "26 Jul 2024"

# name -> (file, special tokens in the tokenizer, the tokens the template writes)
TEMPLATES = {
    "llama3": ("llama3.jinja", {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
               ["<|start_header_id|>", "<|end_header_id|>"]),
    "qwen2_5": ("qwen2_5.jinja", {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
                ["<|im_start|>", "<tool_call>", "</tool_call>"]),
    "qwen3": ("qwen3.jinja", {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
              ["<|im_start|>", "<think>", "</think>"]),
    "deepseek": ("deepseek.jinja", {"bos_token": "<｜begin▁of▁sentence｜>",
                                    "eos_token": "<｜end▁of▁sentence｜>"},
                 ["<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁outputs▁end｜>"]),
    "mistral": ("mistral.jinja", {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
                ["[INST]", "[/INST]"]),
    "gemma": ("gemma.jinja", {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
              ["<start_of_turn>", "<end_of_turn>"]),
    "tools": ("tools.jinja", {"eos_token": "<|end|>"}, ["<|system|>", "<|user|>", "<|assistant|>",
                                                       "<|tool|>"]),
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city, in °C",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "Ville, e.g. Zürich"}},
                   "required": ["city"]}}}

CONVERSATIONS = {
    "system_multi_turn": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
    ],
    "no_system": [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
    ],
    "unicode": [
        {"role": "user", "content": "Traduis « café » en 日本語 🙂"},
        {"role": "assistant", "content": "コーヒー ☕ — naïve résumé\nсловo"},
        {"role": "user", "content": "Merci\t!"},
        {"role": "assistant", "content": "  De rien 🙏  "},
    ],
    "empty_content": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "still there?"},
        {"role": "assistant", "content": "Yes."},
    ],
    "parts": [
        {"role": "user", "content": [{"type": "text", "text": "Describe it."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It is round."}]},
    ],
    "reasoning": [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": "5", "reasoning_content": "Two plus three is five."},
        {"role": "user", "content": "times 4?"},
        {"role": "assistant", "content": "20", "reasoning_content": "5 * 4 = 20"},
    ],
    "think_in_content": [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "<think>\nIt is Paris.\n</think>\n\nParis."},
    ],
    "tool_calls": [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]},
        {"role": "tool", "name": "get_weather", "content": "{\"temp\": 18}"},
        {"role": "assistant", "content": "18 °C in Zürich."},
    ],
}
TOOLS = {"tool_calls": [WEATHER]}
# Qwen3's template renders a list content as "": the answer is not in the text.
DROPS_CONTENT = {("qwen3", "parts")}


def _base_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [json.dumps(c, ensure_ascii=False) for c in CONVERSATIONS.values()] * 3
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return tok.to_str()


@pytest.fixture(scope="module")
def base_tokenizer():
    return _base_tokenizer()


def hf_tokenizer(base, name, chat_template=None):
    """A transformers tokenizer with fixture NAME's special tokens and template."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast
    file, special, markers = TEMPLATES[name]
    tok = Tokenizer.from_str(base)
    tok.add_special_tokens(sorted(set(special.values()) | set(markers)))
    template = chat_template if chat_template is not None else (FIXTURES / file).read_text()
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template, **special)


def ours(name):
    file, special, _ = TEMPLATES[name]
    return ChatTemplate.load(FIXTURES / file, special_tokens=special)


def reference(hf, messages, **kw):
    """transformers' text, or the exception it raises."""
    try:
        return hf.apply_chat_template(messages, tokenize=False, **kw)
    except Exception as e:  # noqa: BLE001 - compared with ours below
        return e


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize("conv", sorted(CONVERSATIONS))
def test_text_and_ids_equal_transformers(base_tokenizer, name, conv):
    hf = hf_tokenizer(base_tokenizer, name)
    tpl = ours(name)
    messages = CONVERSATIONS[conv]
    kw = {"tools": TOOLS[conv]} if conv in TOOLS else {}
    kw["date_string"] = DATE
    # Every prefix, with and without a generation prompt, as the span finder renders them.
    for n in range(1, len(messages) + 1):
        for gen in (False, True):
            want = reference(hf, messages[:n], add_generation_prompt=gen, **kw)
            if isinstance(want, Exception):
                with pytest.raises(ChatTemplateError, match=re.escape(str(want)[:40])):
                    tpl.render(messages[:n], add_generation_prompt=gen, **kw)
                continue
            got = tpl.render(messages[:n], add_generation_prompt=gen, **kw)
            assert got == want
            assert hf.encode(got, add_special_tokens=False) == \
                hf.apply_chat_template(messages[:n], add_generation_prompt=gen, tokenize=True,
                                       return_dict=False, **kw)
    want = reference(hf, messages, **kw)
    if isinstance(want, Exception):
        with pytest.raises(ChatTemplateError):
            render_chat(messages, tpl, **kw)
        return
    if (name, conv) in DROPS_CONTENT:
        # The template leaves the answer out of the text: no record rather than one without it.
        with pytest.raises(ChatTemplateError, match="does not hold the message's content"):
            render_chat(messages, tpl, **kw)
        return
    text, spans = render_chat(messages, tpl, **kw)
    assert text == want
    check_invariants(messages, text, spans)


def check_invariants(messages, text, spans):
    last = 0
    for s, e in spans:
        assert last <= s < e <= len(text)
        assert not text[e - 1].isspace()
        last = e
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert len(spans) <= len(assistants)
    outside = "".join(text[a:b] for a, b in zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(text)]))
    for m in messages:
        content = m.get("content")
        content = content if isinstance(content, str) else "".join(p["text"] for p in content or [])
        if m["role"] == "assistant":
            answer = content.split("</think>")[-1].strip()
            assert any(answer in text[s:e] for s, e in spans)
        elif m["role"] == "user" and content.strip():
            assert content.strip() in outside  # prompts carry no loss


# The exact loss-carrying text per fixture: what the model writes after the
# generation prompt, through its end-of-turn token, and nothing else.
EXPECTED = {
    ("llama3", "system_multi_turn"): ["Hello!<|eot_id|>", "4.<|eot_id|>"],
    ("llama3", "unicode"): ["コーヒー ☕ — naïve résumé\nсловo<|eot_id|>", "De rien 🙏<|eot_id|>"],
    ("llama3", "tool_calls"): ['{"name": "get_weather", "parameters": {"city": "Zürich"}}<|eot_id|>',
                               "18 °C in Zürich.<|eot_id|>"],
    ("qwen2_5", "system_multi_turn"): ["Hello!<|im_end|>", "4.<|im_end|>"],
    ("qwen2_5", "empty_content"): ["<|im_end|>", "Yes.<|im_end|>"],
    ("qwen2_5", "parts"): ["It is round.<|im_end|>"],
    ("qwen2_5", "tool_calls"): ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n'
                                '</tool_call><|im_end|>', "18 °C in Zürich.<|im_end|>"],
    # Qwen3 drops the reasoning of turns before the last user query, and
    # gives the final turn a (possibly empty) <think> block.
    ("qwen3", "system_multi_turn"): ["Hello!<|im_end|>", "<think>\n\n</think>\n\n4.<|im_end|>"],
    ("qwen3", "reasoning"): ["5<|im_end|>", "<think>\n5 * 4 = 20\n</think>\n\n20<|im_end|>"],
    ("qwen3", "think_in_content"): ["<think>\nIt is Paris.\n</think>\n\nParis.<|im_end|>"],
    ("qwen3", "tool_calls"): ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n'
                              '</tool_call><|im_end|>',
                              "<think>\n\n</think>\n\n18 °C in Zürich.<|im_end|>"],
    # DeepSeek: the generation prompt's "<think>\n" is not in the trained turn.
    ("deepseek", "system_multi_turn"): ["Hello!<｜end▁of▁sentence｜>", "4.<｜end▁of▁sentence｜>"],
    ("deepseek", "think_in_content"): ["\n\nParis.<｜end▁of▁sentence｜>"],
    ("deepseek", "tool_calls"): [
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
        '{"city": "Zürich"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
        "18 °C in Zürich.<｜end▁of▁sentence｜>"],
    # Mistral: the space before the answer is the model's to write.
    ("mistral", "system_multi_turn"): [" Hello!</s>", " 4.</s>"],
    ("mistral", "unicode"): [" コーヒー ☕ — naïve résumé\nсловo</s>", " De rien 🙏</s>"],
    ("gemma", "system_multi_turn"): ["Hello!<end_of_turn>", "4.<end_of_turn>"],
    ("gemma", "parts"): ["It is round.<end_of_turn>"],
    ("tools", "tool_calls"): ['<tool_call>{"name": "get_weather", "arguments": {"city": "Z\\u00fcrich"}}'
                              '</tool_call><|end|>', "18 °C in Zürich.<|end|>"],
    ("tools", "empty_content"): ["<|end|>", "Yes.<|end|>"],
}


@pytest.mark.parametrize("name,conv", sorted(EXPECTED))
def test_spans_are_the_assistant_turns(name, conv):
    kw = {"tools": TOOLS[conv]} if conv in TOOLS else {}
    text, spans = render_chat(CONVERSATIONS[conv], ours(name), date_string=DATE, **kw)
    assert [text[s:e] for s, e in spans] == EXPECTED[(name, conv)]


def test_every_fixture_has_exact_spans():
    assert {name for name, _ in EXPECTED} == set(TEMPLATES)


def test_loss_modes_and_reasoning():
    tpl = ours("qwen3")
    messages = CONVERSATIONS["reasoning"]
    text, spans = render_chat(messages, tpl, loss="last_assistant")
    assert [text[s:e] for s, e in spans] == ["<think>\n5 * 4 = 20\n</think>\n\n20<|im_end|>"]
    assert render_chat(messages, tpl, loss="all") == (text, [[0, len(text)]])
    # reasoning_loss=False: the whole reasoning block, tags included, carries no loss.
    text, spans = render_chat(messages, tpl, reasoning_loss=False)
    assert [text[s:e] for s, e in spans] == ["5<|im_end|>", "20<|im_end|>"]
    text, spans = render_chat(CONVERSATIONS["think_in_content"], tpl, reasoning_loss=False)
    assert [text[s:e] for s, e in spans] == ["Paris.<|im_end|>"]
    # enable_thinking=False: the empty think block is the prompt's.
    text, spans = render_chat(CONVERSATIONS["no_system"], tpl, enable_thinking=False)
    assert text.endswith("<think>\n\n</think>\n\nBlue.<|im_end|>\n")
    assert [text[s:e] for s, e in spans] == ["Blue.<|im_end|>"]
    # ... and in earlier turns, which the template renders without one.
    text, spans = render_chat(CONVERSATIONS["system_multi_turn"], tpl, enable_thinking=False)
    assert [text[s:e] for s, e in spans] == ["Hello!<|im_end|>", "4.<|im_end|>"]
    # Reasoning in a turn while the prompt closes thinking: contradictory, refused.
    with pytest.raises(ChatTemplateError, match="enable_thinking=False with a message that has reasoning"):
        render_chat(messages, tpl, enable_thinking=False)
    with pytest.raises(ValueError, match="loss must be one of"):
        render_chat(messages, tpl, loss="user")


def test_offsets_are_code_points():
    text, spans = render_chat(CONVERSATIONS["unicode"], ours("gemma"))
    s, e = spans[0]
    assert text[s:e] == "コーヒー ☕ — naïve résumé\nсловo<end_of_turn>"
    assert len(text.encode("utf-8")) > len(text)  # so byte offsets would differ


@pytest.mark.parametrize("file,match", [
    ("end_marker_changes.jinja", "ends turns differently"),
    ("system_in_last_user.jinja", "renders the messages before this turn differently"),
    ("rewrites_content.jinja", "does not hold the message's content"),
])
def test_templates_whose_spans_cannot_be_placed_raise(file, match):
    tpl = ChatTemplate.load(FIXTURES / "bad" / file, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
    with pytest.raises(ChatTemplateError, match=match) as info:
        render_chat(CONVERSATIONS["system_multi_turn"], tpl)
    assert file in str(info.value) and "messages[2]" in str(info.value)


def test_llama3_date_header_from_strftime_now(base_tokenizer):
    hf = hf_tokenizer(base_tokenizer, "llama3")
    messages = CONVERSATIONS["system_multi_turn"]
    text, spans = render_chat(messages, ours("llama3"))
    assert text == hf.apply_chat_template(messages, tokenize=False)  # fails only across midnight
    assert [text[s:e] for s, e in spans] == ["Hello!<|eot_id|>", "4.<|eot_id|>"]


def test_loading_as_transformers_saves(base_tokenizer, tmp_path):
    hf = hf_tokenizer(base_tokenizer, "qwen2_5")
    messages = CONVERSATIONS["system_multi_turn"]
    want = hf.apply_chat_template(messages, tokenize=False)
    hf.save_pretrained(tmp_path / "jinja")  # chat_template.jinja
    hf.save_pretrained(tmp_path / "legacy", save_jinja_files=False)  # tokenizer_config.json
    assert (tmp_path / "jinja" / "chat_template.jinja").exists()
    assert "chat_template" in json.loads((tmp_path / "legacy" / "tokenizer_config.json").read_text())
    for source in (tmp_path / "jinja", tmp_path / "legacy", tmp_path / "legacy" / "tokenizer_config.json",
                   tmp_path / "jinja" / "chat_template.jinja"):
        assert ChatTemplate.load(source).render(messages) == want
    assert ChatTemplate.load(tmp_path / "legacy").special_tokens["eos_token"] == "<|im_end|>"
    with pytest.raises(ChatTemplateError, match="pass the directory"):
        ChatTemplate.load(tmp_path / "jinja" / "tokenizer_config.json")


def test_named_templates_picked_as_transformers_does(base_tokenizer, tmp_path):
    named = {"default": (FIXTURES / "qwen2_5.jinja").read_text(),
             "tool_use": (FIXTURES / "tools.jinja").read_text()}
    hf = hf_tokenizer(base_tokenizer, "qwen2_5", chat_template=named)
    hf.save_pretrained(tmp_path / "jinja")  # chat_template.jinja + additional_chat_templates/
    hf.save_pretrained(tmp_path / "legacy", save_jinja_files=False)  # a list in the config
    messages = CONVERSATIONS["tool_calls"]
    for d in ("jinja", "legacy"):
        tpl = ChatTemplate.load(tmp_path / d)
        for tools in (None, [WEATHER]):
            assert tpl.render(messages, tools=tools) == hf.apply_chat_template(messages, tools=tools,
                                                                              tokenize=False)
        assert ChatTemplate.load(tmp_path / d, template_name="tool_use").render(messages) == \
            hf.apply_chat_template(messages, chat_template="tool_use", tokenize=False)
    assert "<|assistant|>" in render_chat(messages, ChatTemplate.load(tmp_path / "jinja"), tools=[WEATHER])[0]


def test_processor_chat_template_json_and_special_tokens(tmp_path):
    (tmp_path / "chat_template.json").write_text(json.dumps(
        {"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ image_token }}{% endfor %}"}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False},
        "image_token": "<img>", "add_bos_token": True, "pad_token": None}))
    tpl = ChatTemplate.load(tmp_path)
    assert tpl.special_tokens == {"bos_token": "<s>", "image_token": "<img>"}
    assert tpl.render([{"role": "user", "content": "x"}]) == "<s>x<img>"


def test_sandbox_matches_transformers():
    tpl = ChatTemplate("{% set ns = namespace(_x=1) %}")
    with pytest.raises(Exception, match="underscore"):
        tpl.render([{"role": "user", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="no way"):
        ChatTemplate("{{ raise_exception('no way') }}").render([{"role": "user", "content": "x"}])
    with pytest.raises(Exception, match="unsafe|not safely|access"):
        ChatTemplate("{{ messages.__class__.__mro__ }}").render([{"role": "user", "content": "x"}])
    with pytest.raises(TypeError, match="get_json_schema"):
        ChatTemplate("{{ tools }}").render([{"role": "user", "content": "x"}], tools=[len])
    # None-valued keys are dropped and reasoning aliased, as transformers does.
    text = ChatTemplate("{% for m in messages %}{{ m | tojson }}{% endfor %}").render(
        [{"role": "assistant", "content": None, "reasoning": "r"}])
    assert json.loads(text) == {"thinking": "r", "role": "assistant", "reasoning": "r", "reasoning_content": "r"}
    assert list(json.loads(text)) == ["thinking", "role", "reasoning", "reasoning_content"]


def test_chat_records_and_cli(tmp_path):
    tpl_dir = tmp_path / "model"
    tpl_dir.mkdir()
    (tpl_dir / "chat_template.jinja").write_text((FIXTURES / "qwen2_5.jinja").read_text())
    convs = [{"messages": CONVERSATIONS["system_multi_turn"]},
             {"messages": CONVERSATIONS["tool_calls"], "tools": [WEATHER]}]
    records = list(chat_records(convs, tpl_dir))
    for conv, rec in zip(convs, records):
        assert rec == dict(zip(("text", "loss_spans"),
                               render_chat(conv["messages"], tpl_dir, tools=conv.get("tools"))))
    assert '"name": "get_weather"' in records[1]["text"].split("<|im_end|>")[0]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"conv": c["messages"], "tools": c.get("tools")}, ensure_ascii=False) + "\n"
                           for c in convs), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "tokpack.chat", "--template", str(tpl_dir),
                           "--messages-key", "conv", str(src)], capture_output=True, text=True, check=True)
    assert [json.loads(line) for line in proc.stdout.splitlines()] == records
    src.write_text('{"conv": [{"role": "assistant", "content": "x"}]}\n')
    proc = subprocess.run([sys.executable, "-m", "tokpack.chat", "--template", str(tpl_dir),
                           "--messages-key", "conv", str(src)], capture_output=True, text=True)
    assert proc.returncode == 1 and f"{src}:1:" in proc.stderr and "cannot start with an assistant" in proc.stderr


def test_jinja2_is_lazy_and_named_when_missing():
    code = ("import sys, tokpack; assert 'jinja2' not in sys.modules; sys.modules['jinja2'] = None\n"
            "try:\n    tokpack.render_chat([{'role': 'user', 'content': 'x'}], '{{ 1 }}')\n"
            "except ImportError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install jinja2" in proc.stdout


def test_docs_example_runs_as_written():
    from doc_examples import doc_example
    code = doc_example("python.md", "sft-records")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["['Oui ☕<|im_end|>']", "[[94, 109]]", "[[55, 70]]"]
