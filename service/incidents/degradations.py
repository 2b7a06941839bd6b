"""Degradation incidents (SPEC §5 `type: degradation`): the store side of fail-slow.

The incident runner calls `run` once per pass, inside the pass's transaction and engine
lock. It folds the `train_step` events committed since its last pass into the step
series (`service/progress`), and for every job that reported: finds the episodes
(`attribution/stragglers.episodes`), localises each new one from the per-rank timing of a
window before and inside it plus the job hosts' health events, and keeps one incident per
episode — opened at the onset, updated while it lasts, resolved when speed returns.
An episode already stored with the same onset keeps its verdict: only its extent, slowdown
and cost move, so a pass stays cheap on a 16,384-rank job; unless a health report of its
window dated before the verdict's data ended arrived since (a job's health reports bring
it into the pass as its progress does).

Analysing a job costs 20–40 ms on a 2-core machine (reading a 2,000-step series and
segmenting it), so a pass that analysed every job that reported a step would grow with the
number of jobs, and hold up the interruptions' incidents of the same pass. The background
passes ask a `Schedule` instead: a job is analysed every `EVERY` steps (a slowdown needs
`MIN_SEGMENT` of them to show at all), at once when a health report of it arrives or it
ends, and every job with steps not yet analysed when an analysis is asked for (`POST
/v1/analyze`).
"""

import zlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.engine import Cluster
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.stragglers import Episode, Verdict, episodes, gpu_hours_wasted, localise, windows
from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.incidents.models import engine_state, incident_events, incidents
from faultgraph.service.progress import service as progress

HEALTH_KINDS = ("gpu_perf", "pcie_link", "nic_error", "nic_link", "gpu_thermal")
# A job's last steps are analysed when one of these says it ended.
ENDING_KINDS = ("job_end", "job_fail")
# A background pass analyses a job every this many steps (at a phase its name sets).
EVERY = 4
# Health reports this long before an onset can explain it (the agent posts on change).
LOOKBACK = timedelta(minutes=15)
# A stored episode within this of a found one's onset is the same episode.
SAME = timedelta(minutes=15)
STATE = "degradations"


def _state(conn: Connection) -> int:
    return conn.execute(sa.select(engine_state.c.last_seq).where(engine_state.c.name == STATE)).scalar() or 0


def _save_state(conn: Connection, seq: int) -> None:
    if conn.execute(engine_state.update().where(engine_state.c.name == STATE).values(last_seq=seq)).rowcount == 0:
        conn.execute(engine_state.insert().values(name=STATE, last_seq=seq))


class Schedule:
    """Which jobs a background pass analyses (see the module's docstring): per job, the last
    step folded and the last analysed, as this process saw them. A
    process that starts, or takes over from another replica, analyses each job on its first
    step. A job falls due at the steps of one residue modulo `every`, by a hash of its name,
    so that jobs stepping in time do not all fall due in the same pass. What a pass analysed
    counts only once its transaction commits (`committed`). Replicas keep their own: an
    analysis asked of a replica that is not leading covers the jobs whose steps it folded,
    not the last steps (at most `EVERY` - 1) the leader folded and has not analysed yet."""

    def __init__(self, every: int = EVERY) -> None:
        self._every = every
        self._folded: dict[str, int] = {}
        self._analysed: dict[str, int] = {}
        self._staged: dict[str, int] = {}
        self._ending: set[str] = set()

    def due(self, folded: dict[str, int], urgent: Iterable[str], *, asked: bool) -> list[str]:
        """The jobs to analyse now: `folded` (job → highest step) this pass, `urgent` (health
        reports, ends) at once, every job behind when `asked`."""
        self._staged, self._ending = {}, set()
        for job, step in folded.items():
            self._folded[job] = max(step, self._folded.get(job, step))
        due = set(urgent)
        for job, step in self._folded.items():
            last = self._analysed.get(job)
            if last is None or step >= self._next_due(job, last) or (asked and step > last):
                due.add(job)
        return sorted(due)

    def analysed(self, job: str, *, ended: bool = False) -> None:
        """`job` was analysed through its last folded step (and forgotten if it ended)."""
        if job in self._folded:
            self._staged[job] = self._folded[job]
        if ended:
            self._ending.add(job)

    def committed(self) -> None:
        """The pass's transaction committed: its analyses count."""
        self._analysed |= self._staged
        for job in self._ending:
            self._folded.pop(job, None)
            self._analysed.pop(job, None)
        self._staged, self._ending = {}, set()

    def _next_due(self, job: str, last: int) -> int:
        """The first step after `last` of the job's residue modulo `every`."""
        return last + self._every - (last + zlib.crc32(job.encode())) % self._every

    def behind(self) -> bool:
        """Whether a job has steps folded that no analysis read."""
        return any(step > self._analysed.get(job, -1) for job, step in self._folded.items())

    def analysed_through(self, job: str) -> int | None:
        """The highest step of `job` a committed analysis read (None: not analysed yet)."""
        return self._analysed.get(job)


def run(conn: Connection, cluster: Cluster, *, up_to_seq: int, schedule: Schedule | None = None,
        asked: bool = True) -> dict[str, int]:
    """Fold new progress and keep the degradation incidents current: of every job that
    reported progress, got a health report or ended, or, given a `schedule`, of those it
    says are due. The caller calls `schedule.committed()` after its transaction commits."""
    after_seq = _state(conn)
    folded = progress.fold(conn, after_seq=after_seq, up_to_seq=up_to_seq)
    reported, ended = _health_and_ends(conn, after_seq=after_seq, up_to_seq=up_to_seq)
    urgent = {*reported, *ended}
    due = sorted({*folded, *urgent}) if schedule is None else schedule.due(folded, urgent, asked=asked)
    result = {"opened": 0, "updated": 0, "removed": 0}
    for job in due:
        placement = cluster.placement(job)
        if placement is not None:
            for key, count in _job(conn, cluster, job, placement, reported.get(job, [])).items():
                result[key] += count
        if schedule is not None:
            schedule.analysed(job, ended=job in ended)
    _save_state(conn, up_to_seq)
    return result


def _health_and_ends(conn: Connection, *, after_seq: int, up_to_seq: int) -> tuple[dict[str, list[datetime]], set[str]]:
    """Of the events committed in (after_seq, up_to_seq]: the times of the health reports
    by job, and the jobs that ended."""
    query = (sa.select(events.c.job, events.c.time, events.c.kind)
             .where(events.c.seq > after_seq, events.c.seq <= up_to_seq, events.c.kind.in_(HEALTH_KINDS + ENDING_KINDS),
                    events.c.job.is_not(None)))
    reported: dict[str, list[datetime]] = {}
    ended: set[str] = set()
    for job, time, kind in conn.execute(query):
        if kind in ENDING_KINDS:
            ended.add(job)
        else:
            reported.setdefault(job, []).append(time.replace(tzinfo=UTC))
    return reported, ended


def _health_window(episode: Episode) -> tuple[datetime, datetime]:
    """When a health report can explain an episode."""
    return episode.onset - LOOKBACK, (episode.end or episode.last) + timedelta(minutes=2)


def _late(reported: list[datetime], episode: Episode, root: dict) -> bool:
    """Whether a health report came since an episode's verdict that it could have weighed:
    one of its window, dated before the data the verdict was made on ended (a spool
    replayed late). Reports that come in order are read by the next new verdict only."""
    low, high = _health_window(episode)
    through = root.get("localised_through")
    until = min(high, datetime.fromisoformat(through)) if through else high
    return any(low <= time <= until for time in reported)


def _kept(root: dict, episode: Episode, reported: list[datetime]) -> bool:
    """Whether a stored verdict stands: same onset, a component named, no late report to weigh."""
    return root.get("onset_step") == episode.onset_step and bool(root.get("component")) \
        and not _late(reported, episode, root)


def _job(conn: Connection, cluster: Cluster, job: str, placement: Placement,
         reported: list[datetime]) -> dict[str, int]:
    """Keep a job's episodes as incidents; `reported`: the times of its new health reports."""
    samples = progress.series(conn, job=job)
    found = episodes(samples)
    stored = conn.execute(
        sa.select(incidents).where(incidents.c.job == job, incidents.c.type == "degradation").order_by(incidents.c.number)
    ).fetchall()
    counts = {"opened": 0, "updated": 0, "removed": 0}
    unmatched = list(stored)
    for episode in found:
        match = next((row for row in unmatched if abs(store.from_db_time(row.start) - episode.onset) <= SAME), None)
        if match is not None and _kept(store.json_value(match.root_cause), episode, reported):
            verdict = None
        else:
            verdict = _verdict(conn, cluster, job, placement, samples, episode)
            if verdict is None:
                continue
        values = _values(episode, verdict, match, job, placement)
        if match is not None:
            unmatched.remove(match)
            conn.execute(incidents.update().where(incidents.c.id == match.id).values(**values))
            counts["updated"] += 1
            incident_id = match.id
        else:
            number = (conn.execute(sa.select(sa.func.max(incidents.c.number))).scalar() or 0) + 1
            incident_id = f"inc-{number:06d}"
            conn.execute(incidents.insert().values(id=incident_id, number=number, status_set_by_oncall=False,
                                                   confirmed=None, notes=[], **values))
            counts["opened"] += 1
        if verdict is not None:
            conn.execute(incident_events.delete().where(incident_events.c.incident_id == incident_id))
            store.append(conn, incident_events, pa.table({"incident_id": [incident_id] * len(verdict.evidence),
                                                          "event_id": verdict.evidence}))
    analysed_from = samples[0].time if samples else None
    for row in unmatched:  # an episode the longer series no longer shows
        if analysed_from and store.from_db_time(row.start) >= analysed_from and row.confirmed is None \
                and not row.status_set_by_oncall:
            conn.execute(incidents.delete().where(incidents.c.id == row.id))
            conn.execute(incident_events.delete().where(incident_events.c.incident_id == row.id))
            counts["removed"] += 1
    return counts


def _verdict(conn: Connection, cluster: Cluster, job: str, placement: Placement, samples: list, episode: Episode) -> Verdict | None:
    """Localise an episode from the per-rank windows and the health reports around it."""
    spans = windows(samples, episode)
    if spans is None:
        return None
    before = progress.rank_timing(conn, job=job, low=spans[0][0], high=spans[0][1])
    during = progress.rank_timing(conn, job=job, low=spans[1][0], high=spans[1][1])
    return localise(before, during, placement, cluster.topology, _health(conn, cluster, placement, episode), episode)


def _health(conn: Connection, cluster: Cluster, placement: Placement, episode: Episode) -> list[dict]:
    """GPU, PCIe and NIC reports on the job's hosts around the episode, components resolved."""
    hosts = set(placement.hosts())
    low, high = _health_window(episode)
    query = (
        sa.select(events.c.id, events.c.time, events.c.host, events.c.kind, events.c.component, events.c.attrs)
        .where(events.c.kind.in_(HEALTH_KINDS), events.c.time >= store.to_db_time(low), events.c.time <= store.to_db_time(high))
        .order_by(events.c.time, events.c.id)
    )
    found = []
    for row in conn.execute(query):
        if row.host not in hosts:
            continue
        attrs = store.json_value(row.attrs) or {}
        event = {"id": row.id, "time": row.time.replace(tzinfo=UTC), "host": row.host, "kind": row.kind,
                 "component": row.component, "attrs": attrs}
        if not event["component"] or event["component"] == event["host"]:
            event["component"] = cluster.resolve(event, placement) or event["host"]
        found.append(event)
    return found


def _values(episode: Episode, verdict: Verdict | None, stored: sa.Row | None, job: str, placement: Placement) -> dict:
    """The incident columns of an episode; a kept verdict is left as stored."""
    values = {
        "type": "degradation",
        "slowdown": round(episode.slowdown, 4),
        "scope": f"job:{job}",
        "job": job,
        "opened": store.to_db_time(episode.onset),
        "updated": store.to_db_time(datetime.now(UTC)),
        "start": store.to_db_time(episode.onset),
        "last": store.to_db_time(episode.end or episode.last),
        "planned": False,
        "gpus": placement.world_size,
        "gpu_hours_lost": round(gpu_hours_wasted(episode, placement.world_size), 3),
        "failed_at": store.to_db_time(episode.onset),
        "interruption_end": store.to_db_time(episode.end) if episode.end else None,
    }
    if verdict is not None:
        values |= {
            "symptoms": len(verdict.ranks),
            "hosts": len({placement.host_of(rank) for rank in verdict.ranks}) or 1,
            "root_cause": {"component": verdict.component, "kind": "train_step", "category": verdict.category,
                           "cause": verdict.cause, "confidence": verdict.candidates[0]["score"] if verdict.candidates else 0.0,
                           "evidence": verdict.evidence[:50], "explanation": verdict.explanation,
                           "onset_step": episode.onset_step, "localised_through": (episode.end or episode.last).isoformat(),
                           "baseline_ms": round(episode.baseline_ms, 1),
                           "slow_ms": round(episode.slow_ms, 1)},
            "candidates": verdict.candidates,
            "action": verdict.action,
        }
        confirmed = store.json_value(stored.confirmed) if stored is not None else None
        values["cause"] = (confirmed or {}).get("cause") or verdict.cause
        values["category"] = (confirmed or {}).get("category") or verdict.category
    else:
        assert stored is not None, "a stored verdict is kept only when a stored incident matched"
        root = dict(store.json_value(stored.root_cause))
        root |= {"baseline_ms": round(episode.baseline_ms, 1), "slow_ms": round(episode.slow_ms, 1)}
        values["root_cause"] = root
    if stored is None or not stored.status_set_by_oncall:
        values["status"] = "resolved" if episode.end else "open"
        values["closed"] = values["interruption_end"]
    return values

