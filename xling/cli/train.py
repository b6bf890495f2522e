"""`xling train-lang`, `train-encoder`, `train-task`, `train-fusion`, `self-train` and `soup`: thin commands over
`xling.train`.

The training functions (and torch with them) are imported when a command runs; each command's options, their
defaults and help come from its options dataclass in `xling.train.config` alone.
"""

from __future__ import annotations

from rich.console import Console

from xling.cli.options import command
from xling.cli.progress import TrainingBar
from xling.train.config import FusionOptions, SelfTrainingOptions, SoupOptions, TaskAdapterOptions
from xling.train.text_config import EncoderOptions, LanguageAdapterOptions

console = Console(stderr=True)


@command(LanguageAdapterOptions)
def train_lang(options: LanguageAdapterOptions):
    """Train a language adapter by masked-language modelling on unlabelled text."""
    from xling.train.language import train_language_adapter
    from xling.train.summary import language_report_table

    Console().print(language_report_table(train_language_adapter(options, console, TrainingBar(console))))


@command(EncoderOptions)
def train_encoder_command(options: EncoderOptions):
    """Adapt the encoder itself by continued masked-LM training on a mix of languages; -m takes the folder it writes."""
    from xling.train.encoder import train_encoder
    from xling.train.summary import encoder_report_table

    Console().print(encoder_report_table(train_encoder(options, console, TrainingBar(console))))


@command(TaskAdapterOptions)
def train_task(options: TaskAdapterOptions):
    """Train a NER task adapter (and its head) over the frozen language adapter, or a baseline."""
    from xling.train.summary import selection_summary
    from xling.train.task import train_task_adapter

    Console().print(selection_summary(train_task_adapter(options, console, TrainingBar(console))))


@command(FusionOptions)
def train_fusion_command(options: FusionOptions):
    """Train an AdapterFusion layer over frozen task adapters: Stack(LANG, Fuse(ADAPTERS))."""
    from xling.train.fusion import train_fusion
    from xling.train.summary import selection_summary

    Console().print(selection_summary(train_fusion(options, console, TrainingBar(console)), "fusion "))


@command(SelfTrainingOptions)
def self_train_command(options: SelfTrainingOptions):
    """Self-training without target labels: tag unlabelled text, keep confident sentences, train on them; repeat."""
    from xling.train.self_training import self_train
    from xling.train.summary import self_training_summary

    Console().print(self_training_summary(self_train(options, console, TrainingBar(console))))


@command(SoupOptions)
def soup_command(options: SoupOptions):
    """Average task adapters trained alike (the seeds of one run) weight by weight into one: a model soup."""
    from xling.train.soup import soup, soup_summary

    console.print(soup_summary(options, soup(options)), highlight=False)
