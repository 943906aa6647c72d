"""tokpack with the trainers people run: each module adapts a tokpack.Loader
to one trainer's data and checkpoint protocol. The trainers are not
dependencies of tokpack: a module imports its trainer when it is imported.

- tokpack.integrations.hf: Hugging Face transformers' Trainer (docs/hf.md)
- tokpack.integrations.lightning: Lightning (docs/lightning.md)
"""
