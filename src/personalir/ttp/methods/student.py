"""The distilled student as methods: ``student`` and ``student_<variant>`` (rows of Table 8,
not of Table 4); trained by :mod:`personalir.ttp.training.student`."""

from __future__ import annotations

from personalir.ttp.methods.base import (
    PERSONAL_RETRIEVERS,
    PersonalRetriever,
    TrainedModel,
    rank_texts,
    stage_retriever,
)
from personalir.ttp.training.distill import VARIANTS, student_views
from personalir.ttp.training.student import method_name


@PERSONAL_RETRIEVERS.register("student")
class Student(PersonalRetriever):
    """The distilled student: the original view (instruction + history + query) embedded by
    the trained bi-encoder, exact search over the items' texts; no generation."""

    name, label, uses_history = "student", "Student (distilled)", True
    model_roles = ("student",)
    table4_row = False
    variant: str = "full"
    trained_model = TrainedModel("ttp_student", "ttp/student/{variant}")

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models["student"], self.ctx)
        texts = [
            student_views(self.ctx.history_texts(ex), ex.query, ex.query)[0] for ex in examples
        ]
        return rank_texts(r, examples, texts, self.ctx.depth)


LABELS = {
    "no_qr_p": "Student w/o <q_r,p+>",
    "no_q_qr": "Student w/o <q,q_r>",
    "no_qr_p_no_q_qr": "Student w/o <q_r,p+>, <q,q_r>",
}


def _student_variant(variant: str) -> type[Student]:
    cls = type(
        f"Student_{variant}",
        (Student,),
        {"name": method_name(variant), "label": LABELS[variant], "variant": variant},
    )
    return PERSONAL_RETRIEVERS.register(method_name(variant))(cls)


for _variant in VARIANTS:
    if _variant != "full":
        _student_variant(_variant)
