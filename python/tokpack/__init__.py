"""tokpack: packed, memory-mapped token datasets for LLM training.

    import tokpack
    loader = tokpack.Loader("data/web", seq_len=2048, batch_size=8, seed=1234)
    for batch in loader:
        x, y = batch["input_ids"], batch["labels"]

numpy is the only requirement; batches are torch tensors when torch is
installed (or pass as_="numpy" / as_="dlpack"). See README.md and docs/.
"""
from ._chat import ChatTemplate, ChatTemplateError, chat_records, render_chat
from ._core import StorageOptions, __version__
from ._dataset import Dataset, DocumentSource, Tokenizer, build, remove_documents
from ._loader import Loader, cuda_available
from ._plan import MixturePlan, mixture_plan

__all__ = ["ChatTemplate", "ChatTemplateError", "Dataset", "DocumentSource", "Loader", "MixturePlan",
           "StorageOptions", "Tokenizer", "build", "chat_records", "cuda_available",
           "mixture_plan", "remove_documents", "render_chat", "__version__"]
