"""The knobs of the sample world's confusable catalogue (``sample.confusability``).

They are read by the world's data model (:class:`~personalir.data.sample_world.model.World`
records them) and by the family builder (:mod:`~personalir.data.sample_world.families`), which
also needs the model's products and draws; keeping the knobs in their own module lets both
import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

ATTRIBUTES = ("color", "size", "material", "pack_count")


class ConfusabilityError(ValueError):
    """Invalid confusability settings (``sample.confusability``)."""


@dataclass(frozen=True)
class ConfusabilityParams:
    """Knobs of the catalogue's confusable structure (``sample.confusability``)."""

    family_share: float = 0.7
    family_size: int = 5
    differing_attributes: tuple[str, ...] = ATTRIBUTES
    max_differing: int = 2
    near_duplicate_titles: bool = True
    option_lists: bool = True
    accessories: int = 1
    distractors_per_family: int = 1

    def __post_init__(self) -> None:
        unknown = [a for a in self.differing_attributes if a not in ATTRIBUTES]
        if unknown:
            raise ConfusabilityError(
                f"sample.confusability.differing_attributes: unknown {unknown}; "
                f"expected some of {list(ATTRIBUTES)}"
            )
        if not 0.0 <= self.family_share <= 1.0:
            raise ConfusabilityError(
                f"sample.confusability.family_share must lie in [0, 1], got {self.family_share}"
            )
        if self.family_size < 1 or self.accessories < 0 or self.distractors_per_family < 0:
            raise ConfusabilityError(
                "sample.confusability: family_size must be >= 1, accessories and "
                "distractors_per_family >= 0"
            )
        if self.family_size > 1 and not self.differing_attributes:
            raise ConfusabilityError(
                "sample.confusability: family_size > 1 needs at least one differing attribute"
            )
        if self.max_differing not in (1, 2):
            raise ConfusabilityError(
                f"sample.confusability.max_differing must be 1 or 2, got {self.max_differing}"
            )

    @classmethod
    def from_config(cls, section: dict | None) -> ConfusabilityParams:
        section = dict(section or {})
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - names)
        if unknown:
            raise ConfusabilityError(f"sample.confusability: unknown key(s) {unknown}")
        if "differing_attributes" in section:
            section["differing_attributes"] = tuple(section["differing_attributes"])
        return cls(**section)

    @property
    def products_per_family(self) -> int:
        return self.family_size + self.distractors_per_family + self.accessories

    def n_families(self, n_products: int) -> int:
        """Families that fit into ``family_share`` of ``n_products``."""
        return int(n_products * self.family_share + 1e-9) // self.products_per_family


OFF = ConfusabilityParams(family_share=0.0)  # the family-free catalogue
