"""From word probabilities to IOB2 tags: Viterbi under IOB2 rules, repairing and dropping stray I- tags."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.tiny import run_xling
from xling.data.decoding import allowed_transitions, check_decoder, decode, drop_fragments, viterbi
from xling.errors import XlingError
from xling.tagging.spec import TaggerSpec

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def valid(tags: list[str]) -> bool:
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous not in (f"B-{tag[2:]}", f"I-{tag[2:]}"):
            return False
        previous = tag
    return True


def distribution(*rows: dict[str, float]) -> np.ndarray:
    """Probabilities per word, given as {label: p}; the rest of the mass goes to O."""
    out = np.zeros((len(rows), len(LABELS)))
    for i, row in enumerate(rows):
        for label, p in row.items():
            out[i, LABELS.index(label)] = p
        out[i, 0] += 1 - out[i].sum()
    return out


def test_transitions_allow_inside_only_after_same_type():
    start, transition = allowed_transitions(LABELS)
    assert start.tolist() == [True, True, False, True, False]
    inside_loc = transition[:, LABELS.index("I-LOC")]
    assert [LABELS[i] for i in np.flatnonzero(inside_loc)] == ["B-LOC", "I-LOC"]
    assert transition[:, LABELS.index("B-PER")].all() and transition[:, 0].all()


def test_viterbi_finds_the_best_valid_sequence():
    """Against brute force over every tag sequence, on random distributions."""
    rng = np.random.default_rng(0)
    start, transition = allowed_transitions(LABELS)
    for length in (1, 2, 3, 4):
        for _ in range(25):
            probabilities = rng.dirichlet(np.full(len(LABELS), 0.3), size=length)
            best = max(
                (
                    seq
                    for seq in itertools.product(range(len(LABELS)), repeat=length)
                    if valid([LABELS[i] for i in seq])
                ),
                key=lambda seq: sum(np.log(probabilities[w, i]) for w, i in enumerate(seq)),
            )
            assert viterbi(probabilities, start, transition) == list(best)


def test_decoders_differ_on_stray_inside_tags():
    # "Juan" is most likely I-PER (a fragment), "Perez" clearly I-PER.
    juan_perez = distribution({"I-PER": 0.5, "B-PER": 0.4}, {"I-PER": 0.9})
    assert [t for t, _ in decode(juan_perez, LABELS, "viterbi")] == ["B-PER", "I-PER"]
    assert [t for t, _ in decode(juan_perez, LABELS, "repair")] == ["B-PER", "I-PER"]
    assert [t for t, _ in decode(juan_perez, LABELS, "drop")] == ["O", "O"]
    # A weak I-LOC after O: the repair keeps a one-word entity, Viterbi and drop do not.
    weak = distribution({}, {"I-LOC": 0.5, "B-LOC": 0.05})
    assert [t for t, _ in decode(weak, LABELS, "repair")] == ["O", "B-LOC"]
    assert [t for t, _ in decode(weak, LABELS, "viterbi")] == ["O", "O"]
    assert [t for t, _ in decode(weak, LABELS, "drop")] == ["O", "O"]


def test_split_ends_entities_at_commas():
    # "Punu suyu , Punu pruwinsya": the model runs one place across the comma
    joined = distribution({"B-LOC": 0.9}, {"I-LOC": 0.8}, {"I-LOC": 0.6}, {"I-LOC": 0.6, "B-LOC": 0.3}, {"I-LOC": 0.8})
    words = ["Punu", "suyu", ",", "Punu", "pruwinsya"]
    assert [t for t, _ in decode(joined, LABELS, "viterbi", words)] == ["B-LOC"] + ["I-LOC"] * 4
    assert [t for t, _ in decode(joined, LABELS, "split", words)] == ["B-LOC", "I-LOC", "O", "B-LOC", "I-LOC"]
    assert [t for t, _ in decode(joined, LABELS, "split")] == ["B-LOC"] + ["I-LOC"] * 4  # no words, no commas


def test_decoded_scores_are_the_probabilities_of_the_emitted_tags():
    probabilities = distribution({"I-PER": 0.5, "B-PER": 0.4}, {"I-PER": 0.9}, {"B-LOC": 0.7})
    for decoder in ("viterbi", "split", "repair", "drop"):
        tagged = decode(probabilities, LABELS, decoder, ["Juan", ",", "Lima"])
        assert valid([t for t, _ in tagged])
        assert [p for _, p in tagged] == pytest.approx(
            [probabilities[w, LABELS.index(t)] for w, (t, _) in enumerate(tagged)]
        )
    assert decode(np.zeros((0, len(LABELS))), LABELS) == []


def test_drop_fragments_removes_the_whole_stray_run():
    assert drop_fragments(["I-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-PER", "B-PER"]) == [
        "O",
        "O",
        "O",
        "B-LOC",
        "I-LOC",
        "O",
        "B-PER",
    ]


def test_unknown_decoder_is_refused():
    with pytest.raises(XlingError, match="unknown decoder 'best'; choose one of viterbi, split, repair, drop"):
        check_decoder("best")


def test_tagger_and_evaluate_use_the_decoder(trained_workspace):
    from xling import Tagger
    from xling.scoring import score
    from xling.tagging.evaluate import EvaluationOptions, evaluate
    from xling.tagging.predict import predict_probabilities

    root, model_dir, _, dev = trained_workspace
    # fp32: `predict_probabilities` below computes in fp32 wherever the taggers would pick bf16 (GPUs)
    common = dict(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"), precision="fp32")
    taggers = {d: Tagger.load(**common, decoder=d) for d in ("viterbi", "repair", "drop")}
    from xling.data.conll import read_conll

    sentences = read_conll(dev)
    tokens = [s.tokens for s in sentences]
    tagger = taggers["viterbi"]
    probabilities = predict_probabilities(tagger.model, tagger.tokenizer, tokens, tagger.head)
    for decoder, one in taggers.items():
        expected = [[t for t, _ in decode(p, one.model.heads[one.head].labels, decoder)] for p in probabilities]
        assert [[t for t, _ in s] for s in one.tag_words(tokens)] == expected
        result = evaluate(EvaluationOptions(data=str(dev), tagger=TaggerSpec(lang="qu", decoder=decoder)), tagger=one)
        assert result.decoder == decoder
        assert result.f1 == pytest.approx(score([s.tags for s in sentences], expected).f1)


def test_cli_refuses_an_unknown_decoder_in_one_line(trained_workspace):
    root, model_dir, _, dev = trained_workspace
    run = run_xling(
        "evaluate", "ner", str(dev), "--lang", "qu", "--decoder", "best", "-m", str(model_dir), "-w", str(root / "ws")
    )
    assert run.returncode == 1
    assert run.stderr.strip() == "error: unknown decoder 'best'; choose one of viterbi, split, repair, drop"
