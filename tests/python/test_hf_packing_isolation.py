"""Packed documents and a Hugging Face causal LM in a plain loop: when do they
attend to each other? A tiny random LlamaForCausalLM (no download) gets real
tokpack batches, packing="best_fit" bins and document_boundaries=True concat
windows; one document of a row is changed and the logits of everything else
are compared. In the setup docs/pytorch.md and docs/hf.md document (position_ids,
use_cache=False, no attention_mask; sdpa or eager) nothing else moves, bit for
bit. Each condition is needed: with a cache (the config's default) or an
attention_mask, transformers builds a plain causal mask and the documents
after the changed one change too."""
import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from doc_examples import doc_example  # noqa: E402

SEQ, BATCH = 64, 4
LOADERS = {"best_fit": {"packing": "best_fit"}, "concat": {"document_boundaries": True}}


@pytest.fixture(scope="module")
def documented_forward(packed, tmp_path_factory):
    """docs/pytorch.md's example, run as written (a few steps of training);
    its forward() is the call this file checks."""
    code = doc_example("pytorch.md", "hf-model-loop").replace('"data/web"', repr(packed[0]))
    scope = {"__name__": "hf_model_loop"}
    exec(compile(code, "docs/pytorch.md", "exec"), scope)
    return scope["forward"]


def tiny_llama(attn, vocab=1000):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      num_key_value_heads=2, max_position_embeddings=SEQ,
                                      attn_implementation=attn)
    model = transformers.LlamaForCausalLM(config)
    assert model.config._attn_implementation == attn and model.config.use_cache  # the default
    return model.train()  # as in a training loop (the config has no dropout)


def packed_batch(data, packing):
    """The first batch with a row of 3 or more documents: (batch, row, the
    document number of each of that row's tokens), documents as transformers
    finds them, where position_ids do not go up by one."""
    loader = tokpack.Loader(data, seq_len=SEQ, batch_size=BATCH, seed=3, labels="same",
                            **LOADERS[packing])
    for _ in range(20):
        batch = next(loader)
        pos = batch["position_ids"].long()
        docs = (torch.diff(pos, dim=-1, prepend=pos[:, :1] - 1) != 1).cumsum(-1)
        for row in range(BATCH):
            if docs[row, -1] >= 2:
                kept = {k: v.clone() for k, v in batch.items() if k != "cu_seqlens"}
                return kept, row, docs[row]
    raise AssertionError(f"no row of 3 documents in 20 batches of {packing}")


def change_document(batch, row, where):
    changed = {k: v.clone() for k, v in batch.items()}
    ids = changed["input_ids"]
    ids[row, where] = (ids[row, where] + 1) % 1000
    return changed


def leaky_forward(use_cache=None, attention_mask=False):
    """The call as one would write it without docs/pytorch.md."""
    def forward(model, batch):
        kw = {} if use_cache is None else {"use_cache": use_cache}
        if attention_mask:
            kw["attention_mask"] = torch.ones_like(batch["input_ids"])
        return model(input_ids=batch["input_ids"], labels=batch["labels"],
                     position_ids=batch["position_ids"], **kw)
    return forward


@pytest.mark.parametrize("packing", sorted(LOADERS))
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_changing_a_document_changes_nothing_else_in_the_documented_setup(
        packed, documented_forward, attn, packing):
    model = tiny_llama(attn)
    batch, row, docs = packed_batch(packed[0], packing)
    before = documented_forward(model, batch).logits
    for doc in range(int(docs[-1]) + 1):
        where = docs == doc
        after = documented_forward(model, change_document(batch, row, where)).logits
        assert not torch.equal(after[row, where], before[row, where])  # the document itself
        assert torch.equal(after[row, ~where], before[row, ~where]), f"document {doc} leaked"
        others = [r for r in range(BATCH) if r != row]
        assert torch.equal(after[others], before[others])


@pytest.mark.parametrize("packing", sorted(LOADERS))
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("setup", ["config default (use_cache=True)", "use_cache=True",
                                   "attention_mask of ones"])
def test_each_condition_is_needed(packed, attn, packing, setup):
    """transformers 5.24 builds the block-diagonal mask only when there is no
    cache and no 2-D attention_mask (masking_utils._preprocess_mask_arguments);
    otherwise the mask is causal over the whole row."""
    forward = {"config default (use_cache=True)": leaky_forward(),
               "use_cache=True": leaky_forward(use_cache=True),
               "attention_mask of ones": leaky_forward(use_cache=False, attention_mask=True),
               }[setup]
    model = tiny_llama(attn)
    batch, row, docs = packed_batch(packed[0], packing)
    first = docs == 0
    with torch.no_grad():
        before = forward(model, batch).logits
        after = forward(model, change_document(batch, row, first)).logits
    # every later document of the row sees the first one
    later = after[row, ~first] - before[row, ~first]
    assert later.abs().amax(-1).min() > 1e-6
