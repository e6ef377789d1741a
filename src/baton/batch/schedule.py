"""Which queued features start now: backlog order, within --parallel and per-provider caps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from baton.batch.ledger import FeatureRecord, FeatureStatus

__all__ = ["to_start"]


def to_start(
    features: Sequence[FeatureRecord],
    providers: Mapping[str, Iterable[str]],
    *,
    parallel: int,
    provider_caps: Mapping[str, int],
) -> list[str]:
    """Names of the queued features to start now, first in backlog order first.

    A feature counts once against each provider its terminals run. A feature that would
    break a provider's cap waits; later features that fit may start before it (the cap is
    per provider, so the order holds within each provider).
    """
    running = [f for f in features if f.state == FeatureStatus.RUNNING]
    busy: Counter[str] = Counter()
    for feature in running:
        busy.update(set(providers.get(feature.name, ())))
    free = parallel - len(running)
    chosen: list[str] = []
    for feature in features:
        if free <= 0:
            break
        if feature.state != FeatureStatus.QUEUED:
            continue
        wanted = set(providers.get(feature.name, ()))
        if any(busy[p] >= provider_caps[p] for p in wanted if p in provider_caps):
            continue
        busy.update(wanted)
        chosen.append(feature.name)
        free -= 1
    return chosen
