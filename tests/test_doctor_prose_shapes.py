"""Issue 9 after heldout21: more shapes of an OOM report in prose and in titles
(``parse_wordings_report_shapes`` and the title families of ``parse_wordings``), each in forms
beyond the sentence that showed it, inside the four log wrappers, with the near-misses that must
stay silent."""

from __future__ import annotations

import time

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_report import report_match
from recognition_cases import recognition_tests

_OOM = (
    # a job over a memory limit
    "pytest was running over the 4GB RAM limit on the CI job",
    "the pod went over its memory limit during the export",
    "the worker is way over the 16 GB memory budget after an hour",
    # 显存爆了, machine-translated
    "Display memory burst when the VAE is decoded, 4050 6g",
    "the video memory bursts at 1024x1024",
    "graphics memory burst again on the second image",
    # a memory spike, then the run stops
    "I'm on a 4090 so I've got 24GB of VRAM but during Refinement it will occasionally spike "
    "the VRAM and then everything stops.",
    "the decoder spikes the RAM and the machine freezes",
    # a quoted "killed" message
    'it always popup "killed" message.',
    "the conversion prints 'killed' and exits",
    'after loading the shards it shows "killed"',
    # a title that ends in the kill
    "convertion to hf format of llama2 70b get kill",
    "quantizing the 34B model gets killed",
    # a memory noun with a parenthetical before its leak
    "Memory (CPU and GPU) leaks during the 1st epoch",
    "GPU memory (VRAM) leaking after every validation",
    # growth with two adverb words before the step
    "memory usage and training time increases a lot after epoch 0.",
    "RAM use grows very quickly during the export",
    # a model too large for a card named by its model number
    "Maybe the graph is too large to fit in one 1080ti card.",
    "the 13B model is too big for my 3090 GPU",
    # a size per card that is not enough
    "even 4 gpus with 20GB per gpu are not enough.",
    "24GB is still not enough for the 1024 resolution",
    # a machine's stated memory, then a model it cannot load
    "So laptop with 16GB of RAM now could not load 7GB model :(",
    "with only 8 GB VRAM it fails to load the checkpoint",
    # a crash fixed by lowering a memory lever, over several sentences
    "I ran into a crash today with the model. Maybe the context was too large. After I "
    "reduced the context size from 128K to 64K, the model loaded.",
    "In server mode it will crash even with context 1536. I set it to 1024 and it works",
    "The training crashed at step 300. I lowered the batch size to 4 and it works now.",
    # PyTorch's "Tried to allocate" paraphrased in Chinese (it suddenly wants to allocate 20G)
    "突然要分配20G",
    "推理时想分配 8.00 GiB 然后报错",
    # a runtime's "Out of CPU memory" as a message or a title
    "Out of CPU Memory during validation phase",
    "RuntimeError: Out of system memory",
)

_NOT_OOM = (
    # a limit stated, set or stayed under
    "the job stays under the 4GB RAM limit",
    "set the memory limit over 4GB in the config",
    "we talked over the memory limit options in the meeting docs",
    # memory hardware's burst transfers
    "video memory burst length is 8 bytes on GDDR6",
    "GPU memory burst mode improves the bandwidth",
    # a spike that passes, a spike of something else
    "the first step spikes the VRAM but then it recovers",
    "the loss spikes and then training stops early by design of the scheduler",
    # a kill the user made, a state, a wish
    "I pressed Ctrl+C and the 'killed' message appeared",
    "how to get killed processes restarted",
    "the game shows a 'killed' message when your character dies by the user",
    # no leak, growth that scales with an input
    "no memory (CPU or GPU) leaks were found",
    "memory usage increases a lot with the batch size",
    # something else that does not fit
    "the sentence is too long to fit in one line",
    "too large for the 1080 resolution preset",
    # a size that is enough
    "20GB per gpu are enough for this model",
    # a statement about anyone's machine, a load that fails for a named reason, not a model
    "with 16GB of RAM you cannot load models larger than 13B",
    "with 16 GB of RAM it could not load the model because the file was corrupt",
    "a laptop with 16GB of RAM could not load the page",
    # a lever changed in a release note, in advice, raised, or a crash with another cause
    "Fixed a crash when the batch size was reduced to 1 and it works.",
    "If it crashes, reduce the batch size to 8 and it works.",
    "It crashed with a shape error. I set the batch size to 16 and it works.",
    "The app crashed after the update. I set the theme to dark and it works.",
    # a need, and tasks assigned (分配 is also to assign)
    "模型需要分配20G给权重",
    "要分配任务给每个worker",
    # data moved out of the host's memory
    "copy the tensor out of CPU memory into the GPU",
)

(
    test_prose_shape_is_recognised,
    test_prose_shapes_are_recognised_inside_a_log,
    test_prose_shape_near_miss_is_silent,
) = recognition_tests(_OOM, _NOT_OOM)


def test_the_shapes_are_read_at_the_generic_rules_low_confidence() -> None:
    for text in ("pytest was running over the 4GB RAM limit", 'it popup "killed" message'):
        d = diagnose_text(text)
        assert d.primary is not None
        assert d.primary.runtime == "generic"
        assert d.confidence <= 0.45


def test_the_shapes_stay_linear_on_near_matching_junk() -> None:
    started = time.process_time()
    for line in (
        "was over the " * 20_000 + "x",
        '"killed" ' * 20_000 + "x",
        "video memory " * 20_000 + "burst",
        "gets kill " * 20_000 + "x",
        "crash context " + "reduced the batch " * 20_000 + "x",
    ):
        report_match(line, line.lower())
    assert time.process_time() - started < 4.0
