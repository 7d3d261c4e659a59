"""Has a pre-trained model learnt to use context? Two checks that need no fine-tuning, for the CPU recipe's
diagnosis (BENCHMARKS.md, "CPU recipe"):

  fill-mask   the top predictions for [MASK] in a few English sentences: a model on the "unigram plateau"
              answers `the , of .` whatever the context
  type probe  part of speech of words the probe never saw, read linearly off the input word embeddings
              (UD English-EWT train: each one-piece word's commonest UPOS tag; a quarter of the word
              types held out): a random init scores the majority class, embeddings that learnt from
              context score above it

    EWT=../shared/eval/ud_en_ewt/en_ewt-ud
    python bench/context_probe.py HF_DIR [HF_DIR ...] --conllu $EWT-train.conllu.xz

HF_DIR: a `trainer.export` output (config.json, model.safetensors, tokenizer files). One thread, seconds.
"""

from __future__ import annotations

import argparse
import collections
import lzma
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import BertForMaskedLM, BertTokenizerFast
from transformers.utils import logging

SENTENCES = ("the capital of france is [MASK] .", "he [MASK] to the store yesterday .",
             "she is a very [MASK] woman .", "in 1990 , the [MASK] was founded .",
             "they have [MASK] children .", "the united [MASK] of america")
WORDS = "bert.embeddings.word_embeddings.weight"


def fill_mask(hf_dir: Path) -> list[str]:
    model, tokenizer = (
        BertForMaskedLM.from_pretrained(str(hf_dir)).eval(),
        BertTokenizerFast.from_pretrained(str(hf_dir)),
    )
    lines = []
    for sentence in SENTENCES:
        encoded = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            logits = model(**encoded).logits[0]
        at = int((encoded.input_ids[0] == tokenizer.mask_token_id).nonzero()[0, 0])
        top = tokenizer.convert_ids_to_tokens(logits[at].topk(5).indices.tolist())
        lines.append(f"{sentence:40s} -> {' '.join(top)}")
    return lines


def commonest_tags(conllu: Path) -> dict[str, str]:
    """Lower-cased word form -> its commonest UPOS tag, over words seen at least twice."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    opener = lzma.open if conllu.suffix == ".xz" else open
    with opener(conllu, "rt", encoding="utf-8") as lines:
        for line in lines:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 10 and fields[0].isdigit():
                counts[fields[1].lower()][fields[3]] += 1
    return {w: c.most_common(1)[0][0] for w, c in counts.items() if sum(c.values()) >= 2}


def type_probe(embeddings: torch.Tensor, vocab: dict[str, int], tags: dict[str, str], seed: int = 0) -> tuple:
    """(accuracy on held-out word types, majority-class accuracy, train types, test types): a linear probe on
    the unit-normalised embeddings of one-piece words."""
    words = sorted(w for w in tags if w in vocab)
    names = sorted(set(tags.values()))
    order = torch.randperm(len(words), generator=torch.Generator().manual_seed(seed)).tolist()
    held = {words[i] for i in order[: len(words) // 4]}
    x = embeddings / embeddings.norm(dim=1, keepdim=True)

    def split(chosen: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return x[[vocab[w] for w in chosen]], torch.tensor([names.index(tags[w]) for w in chosen])

    (x_train, y_train), (x_test, y_test) = split([w for w in words if w not in held]), split(sorted(held))
    torch.manual_seed(seed)
    probe = torch.nn.Linear(x.shape[1], len(names))
    optimizer = torch.optim.Adam(probe.parameters(), lr=0.05)
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(x_train), y_train) + 1e-3 * probe.weight.pow(2).sum()
        loss.backward()
        optimizer.step()
    accuracy = float((probe(x_test).argmax(1) == y_test).float().mean())
    majority = float((y_test == torch.bincount(y_train).argmax()).float().mean())
    return accuracy, majority, len(y_train), len(y_test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path, help="trainer.export outputs")
    parser.add_argument("--conllu", type=Path, required=True, help="UD train file (.conllu or .conllu.xz)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    tags = commonest_tags(args.conllu)
    for hf_dir in args.models:
        print(hf_dir)
        for line in fill_mask(hf_dir):
            print("  " + line)
        vocab = BertTokenizerFast.from_pretrained(str(hf_dir)).get_vocab()
        trained = load_file(hf_dir / "model.safetensors")[WORDS]
        for name, embeddings in (("pre-trained", trained), ("random init", torch.randn_like(trained) * 0.02)):
            accuracy, majority, n_train, n_test = type_probe(embeddings, vocab, tags)
            print(
                f"  type probe, {name}: {accuracy:.3f} on {n_test} held-out word types (majority class "
                f"{majority:.3f}; {n_train} types to fit)"
            )


if __name__ == "__main__":
    main()
