"""`xling train-lang`, `train-encoder`, `train-task`, `train-fusion`, `self-train` and `soup`: thin commands over
`xling.train`.

The four that train adapters are built from the run registry recipes use (`xling.recipes.kinds.RUNS`: each run's
options, trainer and summary), so a command and a recipe step of the same name run the same code. The training
functions (and torch with them) are imported when a command runs; each command's options, their defaults and
help come from its options dataclass alone.
"""

from __future__ import annotations

from rich.console import Console

from xling.cli.options import command
from xling.cli.progress import TrainingBar
from xling.recipes.kinds import RUNS, Training
from xling.train.config import SoupOptions
from xling.train.text_config import EncoderOptions

console = Console(stderr=True)


def training_command(run: str, help_text: str):
    """The command of a training run of the registry: progress on stderr, the trainer's report summed up on stdout."""
    kind: Training = RUNS[run]

    def train(options) -> None:
        Console().print(kind.summary(kind.train(options, console, TrainingBar(console))))

    train.__doc__ = help_text
    return command(kind.options)(train)


train_lang = training_command("train-lang", "Train a language adapter by masked-language modelling on unlabelled text.")
train_task = training_command(
    "train-task", "Train a NER task adapter (and its head) over the frozen language adapter, or a baseline."
)
train_fusion_command = training_command(
    "train-fusion", "Train an AdapterFusion layer over frozen task adapters: Stack(LANG, Fuse(ADAPTERS))."
)
self_train_command = training_command(
    "self-train",
    "Self-training without target labels: tag unlabelled text, keep confident sentences, train on them; repeat.",
)


@command(EncoderOptions)
def train_encoder_command(options: EncoderOptions):
    """Adapt the encoder itself by continued masked-LM training on a mix of languages; -m takes the folder it writes."""
    from xling.train.encoder import train_encoder
    from xling.train.summary import encoder_report_table

    Console().print(encoder_report_table(train_encoder(options, console, TrainingBar(console))))


@command(SoupOptions)
def soup_command(options: SoupOptions):
    """Average task adapters trained alike (the seeds of one run) weight by weight into one: a model soup."""
    from xling.train.soup import soup, soup_summary

    console.print(soup_summary(options, soup(options)), highlight=False)
