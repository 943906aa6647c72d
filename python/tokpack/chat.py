"""Conversations (JSONL) to loss-masked records (JSONL) for `tokpack build`:

    python -m tokpack.chat --template MODEL_DIR_OR_tokenizer_config.json IN.jsonl > OUT.jsonl
    python -m tokpack.chat --template tok/ IN.jsonl | tokpack build -i - ...

Each input line is a JSON object whose "messages" (--messages-key) is a list
of chat messages (and whose "tools", if any, are that conversation's tools);
each output line is {"text": ..., "loss_spans": [[start, end], ...]} with spans
in characters (Python str indices) of text, as tokpack.render_chat makes them.
"""
import argparse
import json
import sys

from ._chat import LOSS_MODES, ChatTemplate, ChatTemplateError, render_chat


def _lines(paths):
    for path in paths:
        if path == "-":
            for n, line in enumerate(sys.stdin, 1):
                yield "<stdin>", n, line
        else:
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    yield path, n, line


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tokpack.chat", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", default=["-"], help="JSONL files ('-' or none: stdin)")
    p.add_argument("--template", required=True,
                   help="a model directory, tokenizer_config.json, chat_template.json or .jinja file")
    p.add_argument("--template-name", help="one of several named templates (e.g. tool_use)")
    p.add_argument("--loss", choices=LOSS_MODES, default="assistant")
    p.add_argument("--no-reasoning-loss", action="store_true",
                   help="no loss on reasoning (<think>...</think>) inside assistant turns")
    p.add_argument("--messages-key", default="messages")
    p.add_argument("--tools-key", default="tools", help="a record's tools (JSON schemas)")
    p.add_argument("--template-kwargs", default="{}",
                   help='JSON object of extra template variables, e.g. \'{"enable_thinking": false}\'')
    p.add_argument("--skip-bad-lines", action="store_true",
                   help="report bad lines on stderr and go on (else the first one stops the run)")
    args = p.parse_args(argv)
    try:
        kwargs = json.loads(args.template_kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("not an object")
    except ValueError as e:
        p.error(f"--template-kwargs: {e}")
    try:
        template = ChatTemplate.load(args.template, template_name=args.template_name)
    except (OSError, ChatTemplateError, ImportError) as e:
        print(f"tokpack.chat: {e}", file=sys.stderr)
        return 2
    out = sys.stdout
    bad = written = 0
    for path, n, line in _lines(args.inputs):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or args.messages_key not in record:
                raise ValueError(f"no {args.messages_key!r} key")
            tools = record.get(args.tools_key) if args.tools_key else None
            text, spans = render_chat(record[args.messages_key], template, loss=args.loss,
                                      reasoning_loss=not args.no_reasoning_loss, tools=tools, **kwargs)
            out.write(json.dumps({"text": text, "loss_spans": spans}, ensure_ascii=False) + "\n")
            written += 1
        except (ValueError, TypeError, KeyError) as e:  # ChatTemplateError, JSON errors
            print(f"{path}:{n}: {e}", file=sys.stderr)
            if not args.skip_bad_lines:
                return 1
            bad += 1
    out.flush()
    if bad:
        print(f"tokpack.chat: {written} records, {bad} bad lines skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
