"""The paper's GPU cost per game from FLOPs: a budget that needs no GPU to compute.

Each stage's work is counted in tokens from the params (configs/paper.yaml) and the token
lengths of ``Shapes`` (what the params leave open), turned into FLOPs and then into
GPU-hours at a stated model-FLOPs utilization (MFU) on H100- and A800-class GPUs:

- FLOPs: 2·N per token a model reads (prefill, scoring) or writes (decoding); 6·N per
  token GRPO trains on (the LoRA policy's forward and backward, 4·N: the frozen weights
  take no gradient, only the input's; and the reference forward, 2·N, since beta > 0).
  N is what a token is multiplied by (``Arch.matmul_params``); attention over the context
  is left out (under a tenth of 2·N per token at these lengths).
- GPU-hours: work bound by arithmetic (prefill, scoring, training) at ``Shapes.compute_mfu``;
  decoding, bound by reading the weights and each sequence's KV cache once a step, at a share
  (``Shapes.decode_share``) of the MFU that bandwidth allows (``decode_bound``).

Every assumption is a field of ``Shapes``, ``GPUS`` or ``ARCHS`` (docs/scaling.md, "Cost
model", lists them and why). bench/gpu_check.py divides the same token counts by measured
rates instead.

    python bench/gpu_cost.py                          # configs/paper.yaml, every game
    python bench/gpu_cost.py --params params.yaml --game onuw
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from stackelberg.params import Params, entry_models, load_params

ROOT = Path(__file__).resolve().parents[1]
PAPER_PARAMS = ROOT / "configs/paper.yaml"
#: the paper's reported training: 4 A800 GPUs for about 50 hours
PAPER_GPUS, PAPER_HOURS = 4, 50
PAPER_GPU_HOURS = PAPER_GPUS * PAPER_HOURS


@dataclass(frozen=True)
class Arch:
    """A Qwen2-layout decoder's shape (its config.json): enough to count parameters and the
    KV cache, so that N is computed from the model, not typed."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool = False
    rope_theta: float = 1e6
    rms_eps: float = 1e-6
    max_positions: int = 32768

    @property
    def kv_width(self) -> int:
        return self.kv_heads * (self.hidden // self.heads)

    @property
    def params(self) -> int:
        """All parameters: q, k, v (with biases) and o, the gated MLP, two norms a layer,
        the embeddings (twice untied) and the final norm."""
        attention = (
            2 * self.hidden * (self.hidden + self.kv_width) + self.hidden + 2 * self.kv_width
        )
        layer = attention + 3 * self.hidden * self.intermediate + 2 * self.hidden
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return self.layers * layer + embeddings + self.hidden

    @property
    def matmul_params(self) -> int:
        """N of the FLOP count: the input embedding is a lookup, not a product (tied, the
        same matrix is the output head, which is one)."""
        return self.params - (0 if self.tied else self.vocab * self.hidden)

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token in every layer, in bf16."""
        return 2 * self.layers * self.kv_width * 2

    def config(self, **token_ids: int | None):
        """This shape as a transformers ``Qwen2Config`` (bench/random_model.py builds
        random-weight models from it, no model hub needed); ``token_ids``: the tokenizer's
        ``bos_token_id``, ``eos_token_id`` and ``pad_token_id``."""
        from transformers import Qwen2Config

        return Qwen2Config(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            max_position_embeddings=self.max_positions,
            rope_parameters={"rope_type": "default", "rope_theta": self.rope_theta},
            rms_norm_eps=self.rms_eps,
            tie_word_embeddings=self.tied,
            **token_ids,
        )


#: the paper's models, from their config.json (both: rope_theta 1e6, rms_norm_eps 1e-6,
#: max_position_embeddings 32768, untied embeddings, a vocabulary padded to 152,064)
ARCHS = {
    "Qwen/Qwen2.5-7B-Instruct": Arch(
        hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4, vocab=152064
    ),
    "Qwen/Qwen2.5-72B-Instruct": Arch(
        hidden=8192, intermediate=29568, layers=80, heads=64, kv_heads=8, vocab=152064
    ),
}


@dataclass(frozen=True)
class Gpu:
    name: str
    peak_flops: float  # bf16 dense tensor FLOP/s (the datasheet's figure without sparsity)
    bandwidth: float  # HBM bytes/s


GPUS = (
    Gpu("H100 SXM", 989e12, 3.35e12),
    Gpu("A800 SXM 80GB", 312e12, 2.039e12),  # an A100 80GB's compute and memory
)


@dataclass(frozen=True)
class Shapes:
    """What the params leave open; docs/scaling.md gives the reasons for each value."""

    refiner_prompt_tokens: int = 2000  # rules, role, state, history, base speech (cap: 6,000)
    completion_tokens: int = 256  # an Analysis line and a ~100-word Response (cap: 512)
    measurer_context_tokens: int = 2000  # the follower's prompt (bench/scoring.py's shape)
    response_tokens: int = 28  # each of the 2K intents the Measurer scores
    refined_speeches_per_game: int = 20  # the tested camp's speeches in one tournament game
    compute_mfu: tuple[float, float] = (0.20, 0.40)  # prefill, scoring, training
    decode_share: tuple[float, float] = (0.15, 0.45)  # of decode_bound's MFU
    measurer_gpus: int = 4  # the Measurer's vLLM server (--tensor-parallel-size)


#: FLOPs per token per parameter multiplied by, by the kind of pass
FLOPS_PER_TOKEN = {"forward": 2, "decode": 2, "lora_train": 4}


@dataclass(frozen=True)
class Work:
    """Tokens one model runs through in one kind of pass, for one stage."""

    stage: str
    model: str
    kind: str  # forward (prefill, scoring, reference), decode, lora_train (forward + backward)
    tokens: float
    batch: int = 1  # decode: sequences a GPU decodes together
    context: float = 0.0  # decode: mean tokens each sequence attends
    rate: str | None = None  # the gpu_check rate that covers it: gen, train or score

    def flops(self) -> float:
        return FLOPS_PER_TOKEN[self.kind] * ARCHS[self.model].matmul_params * self.tokens


def decode_bound(arch: Arch, gpu: Gpu, batch: int, context: float) -> float:
    """The MFU a decode step can reach at best: it reads the weights (bf16) and each
    sequence's KV cache once, for ``batch`` new tokens."""
    step_bytes = 2 * arch.matmul_params + batch * context * arch.kv_bytes_per_token
    return 2 * arch.matmul_params * batch * gpu.bandwidth / step_bytes / gpu.peak_flops


def utilization(work: Work, gpu: Gpu, shapes: Shapes) -> tuple[float, float, float]:
    """(lowest, middle, highest) MFU of a piece of work."""
    low, high = shapes.compute_mfu
    if work.kind == "decode":
        bound = decode_bound(ARCHS[work.model], gpu, work.batch, work.context)
        low, high = (
            min(s * bound, m) for s, m in zip(shapes.decode_share, shapes.compute_mfu, strict=True)
        )
    return low, (low + high) / 2, high


def gpu_hours(work: Work, gpu: Gpu, shapes: Shapes) -> tuple[float, float, float]:
    """(fewest, middle, most) GPU-hours: FLOPs / (peak x MFU), at the highest, middle and
    lowest MFU."""
    low, mid, high = utilization(work, gpu, shapes)
    return tuple(work.flops() / (gpu.peak_flops * u) / 3600 for u in (high, mid, low))


def workload(params: Params, game: str, shapes: Shapes = Shapes()) -> list[Work]:
    """The work of one game's GPU stages at ``params`` (self-play and label run on API models).

    sample: each instance's prompt once (the local backend forks it into its n samples);
    score and the GRPO reward: per instance the Measurer's context once, then each candidate
    and its 2K responses (shared-prefix scoring; vLLM's prefix cache); GRPO: TRL generates
    with transformers, each completion's prompt prefilled anew (``generation: local``: once
    a group), and with ``share_prompts`` trains on each prompt once a group; evaluate: the
    untrained and each trained Refiner's candidates on the test instances and their scores,
    and the trained Refiner's rewrites in the tournaments' refiner+X games.
    """
    select, sample, label = (params.for_game(s, game) for s in ("select", "sample", "label"))
    grpo, evaluate = params.for_game("grpo", game), params.for_game("evaluate", game)
    refiner = entry_models(params.models.refiner)[0]
    measurers = [m.model for m in entry_models(params.models.measurer)]
    unknown = sorted({refiner.model, *measurers} - set(ARCHS))
    if unknown:
        raise ValueError(f"no architecture in ARCHS for {', '.join(unknown)}")
    test = round(select.instances * select.test_fraction)
    prompt = min(shapes.refiner_prompt_tokens, sample.max_prompt_tokens)
    completion = min(shapes.completion_tokens, sample.max_new_tokens)
    context = prompt + completion / 2  # what a decoded token attends, on average
    responses = 2 * label.k * shapes.response_tokens

    def generated(
        stage: str, prompts: float, n: int, batch: int, prefills: int = 1, rate: str = "gen"
    ) -> list[Work]:
        """Each prompt prefilled ``prefills`` times, then its n completions decoded."""
        return [
            Work(stage, refiner.model, "forward", prompts * prefills * prompt),
            Work(stage, refiner.model, "decode", prompts * n * completion, batch, context, rate),
        ]

    def scored(stage: str, instances: float, n: int) -> list[Work]:
        tokens = instances * (shapes.measurer_context_tokens + n * (completion + responses))
        return [Work(stage, m, "forward", tokens, rate="score") for m in measurers]

    # a served Refiner decodes as many sequences at once as the requests in flight
    batch = refiner.max_concurrency if refiner.backend == "openai" else refiner.batch_size
    works = generated("sample", select.instances, sample.n, batch)
    works += scored("score", select.instances, sample.n)

    visits = (select.instances - test) * grpo.epochs  # a prompt per visit, G completions each
    g = grpo.num_generations
    stage = "grpo: generate + train"
    prefills = 1 if grpo.generation == "local" else g
    works += generated(stage, visits, g, grpo.completions_per_process, prefills, "train")
    packed = prompt + g * (completion + 1) if grpo.share_prompts else g * (prompt + completion)
    works.append(Work(stage, refiner.model, "lora_train", visits * packed))
    if grpo.beta:
        works.append(Work(stage, refiner.model, "forward", visits * packed))  # the reference
    works += scored("grpo: Measurer reward", visits, g)

    refiners = 2  # the untrained and the trained one (grpo.ablations and views: not counted)
    works += generated("evaluate: held-out", refiners * test, evaluate.n, batch)
    works += scored("evaluate: held-out", refiners * test, evaluate.n)
    refined = [c for c in evaluate.conditions if c.startswith("refiner+")]
    games = len(refined) * (len(evaluate.camps) or 2) * evaluate.tournament_games
    speeches = games * shapes.refined_speeches_per_game
    works += generated("evaluate: tournaments", speeches, 1, batch)
    return works


def stage_hours(
    works: list[Work], gpu: Gpu, shapes: Shapes = Shapes()
) -> dict[str, tuple[float, float, float]]:
    """(fewest, middle, most) GPU-hours per stage, in the order of ``works``."""
    out: dict[str, tuple[float, float, float]] = {}
    for work in works:
        hours = gpu_hours(work, gpu, shapes)
        out[work.stage] = tuple(
            a + b for a, b in zip(out.get(work.stage, (0, 0, 0)), hours, strict=True)
        )
    return out


def total(hours: dict[str, tuple[float, float, float]]) -> tuple[float, float, float]:
    """The stages' (fewest, middle, most) GPU-hours added up."""
    return tuple(map(sum, zip(*hours.values(), strict=True)))


def rate_hours(works: list[Work], rates: dict[str, float | None]) -> dict[str, float | None]:
    """GPU-hours per stage from measured rates (tokens/s per GPU; gpu_check's ``gen``,
    ``train``, ``score``): the same token counts, each divided by the rate that covers it;
    None where a stage needs a rate that was not measured."""
    out: dict[str, float | None] = {}
    for work in works:
        out.setdefault(work.stage, 0.0)
        if work.rate is None or out[work.stage] is None:
            continue
        rate = rates.get(work.rate)
        out[work.stage] = None if rate is None else out[work.stage] + work.tokens / rate / 3600
    return out


def grpo_held_hours(
    hours: dict[str, tuple[float, float, float]], grpo_gpus: int, measurer_gpus: int
) -> tuple[float, float, float]:
    """GPU-hours the GRPO stage holds on a node where the Measurer's server has GPUs of its
    own (docs/scaling.md, "On a GPU node"): a step's rollouts and training wait for its
    reward and the other way round, so both groups are held for the sum of their times."""
    policy, reward = hours["grpo: generate + train"], hours["grpo: Measurer reward"]
    return tuple(
        (grpo_gpus + measurer_gpus) * (p / grpo_gpus + r / measurer_gpus)
        for p, r in zip(policy, reward, strict=True)
    )


def spread(hours: tuple[float, float, float]) -> str:
    """'middle (fewest-most)', three significant figures."""
    fewest, middle, most = hours
    return f"{middle:,.3g} ({fewest:,.3g}-{most:,.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default=str(PAPER_PARAMS), help="a params file")
    parser.add_argument("--game", help="one game (default: every game of the params)")
    for field in fields(Shapes):
        flag, pair = "--" + field.name.replace("_", "-"), isinstance(field.default, tuple)
        help = f"default: {field.default}"
        if pair:
            parser.add_argument(flag, type=float, nargs=2, metavar=("LOW", "HIGH"), help=help)
        else:
            parser.add_argument(flag, type=int, help=help)
    args = parser.parse_args()
    params = load_params(args.params)
    given = {f.name: getattr(args, f.name) for f in fields(Shapes)}
    shapes = Shapes(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in given.items() if v is not None}
    )
    print(f"GPU cost per game from FLOPs ({args.params})")
    print("  " + ", ".join(f"{f.name} {getattr(shapes, f.name)}" for f in fields(Shapes)))
    for game in [args.game] if args.game else params.games:
        try:
            works = workload(params, game, shapes)
        except ValueError as err:
            sys.exit(f"gpu_cost: {err}")
        per_gpu = [stage_hours(works, gpu, shapes) for gpu in GPUS]
        flops: dict[str, float] = {}
        for work in works:
            flops[work.stage] = flops.get(work.stage, 0.0) + work.flops()
        print(f"\n{game}: GPU-hours per game, middle (range)")
        print(f"  {'stage':24} {'FLOPs':>9}" + "".join(f" {g.name:>24}" for g in GPUS))
        for stage, f in flops.items():
            row = "".join(f" {spread(hours[stage]):>24}" for hours in per_gpu)
            print(f"  {stage:24} {f:9.2e}{row}")
        totals = [total(hours) for hours in per_gpu]
        print(
            f"  {'total':24} {sum(flops.values()):9.2e}"
            + "".join(f" {spread(t):>24}" for t in totals)
        )
        grpo_gpus = params.for_game("grpo", game).processes
        held = grpo_held_hours(per_gpu[-1], grpo_gpus, shapes.measurer_gpus)
        print(
            f"  GRPO's {grpo_gpus} GPUs and the Measurer's {shapes.measurer_gpus} held, "
            f"A800: {spread(held)}"
        )
        ratio = tuple(h / PAPER_GPU_HOURS for h in totals[-1])
        print(
            f"  the paper: ~{PAPER_GPU_HOURS} GPU-hours ({PAPER_GPUS} A800 x ~{PAPER_HOURS} h); "
            f"the total on A800 is {spread(ratio)} of it"
        )
    print("\nGPUs, and the MFU a decode step can reach at best (decode_bound)")
    decodes = sorted({(w.model, w.batch, w.context) for w in works if w.kind == "decode"})
    for gpu in GPUS:
        bounds = ", ".join(
            f"{model.split('/')[-1]} {batch} sequences {decode_bound(ARCHS[model], gpu, batch, c):.1%}"
            for model, batch, c in decodes
        )
        print(
            f"  {gpu.name}: {gpu.peak_flops / 1e12:.0f} TFLOP/s bf16, "
            f"{gpu.bandwidth / 1e12:.2f} TB/s; {bounds}"
        )


if __name__ == "__main__":
    main()
