"""Run one case at one API version against one target and say what happened. Knows nothing of pytest."""

from __future__ import annotations

import itertools
import logging
import subprocess
import threading
import time
from typing import Callable

from ..client.cluster import Cluster, ClusterError
from ..client.connection import ClientError
from ..client.transcript import Transcript
from ..protocol.codec import Codec
from ..protocol.errors import error_name
from ..protocol.exceptions import ProtocolError
from ..targets.base import Capability, CapabilityMissing, ControlFailed, Target
from ..suite.components import Components
from ..suite.model import Case, CaseResult
from ..results.record import Outcome
from . import broker_config, verdict
from .context import Context, Skip
from .dispatch import run_steps
from .resources import Resources, delete_topics, replicas_needed, too_few_brokers, wait_until_gone
from .shared_fault import SharedFault
from .shared_restart import SharedRestart
from .steps import bundled
from .learned import ItemView, KnownHazard, Learned
from .under_way import UnderWay, last_request, last_sent, unanswered
from .walk_ahead import WalkAhead


log = logging.getLogger(__name__)
LIVENESS_TIMEOUT_S = 5.0
# A crashed process's connections close a moment before it can be reaped: how long to wait for how it ended.
# Waited in full only while the process still runs (a hung target); a dead one returns at once. 1 s was once too
# short on a loaded 2-core machine: a run of the tests reported the mock's SIGABRT as no more than a refused
# connection.
ENDING_WAIT_S = 5.0
UNDER_IT = "the target stopped answering while another item ran beside this one, and the harness restarted it under this one"
# How long a target brought back by the user's command (``--restart-command``) may take to answer again.
BRING_BACK_WAIT_S = 60.0
NOT_KNOWN = ("which took it down is not known: rerun them with --jobs 1, or let the harness bring the target back "
             "(--restart-command for a HOST:PORT target) and it reruns them one at a time")


class RerunAlone(Exception):
    """From :meth:`Runner.run` given ``rerun_alone``: the target stopped answering while this item ran beside
    others, and the harness brought it back. Which of them took it down is not known, so this item has no
    verdict yet: it is to be run again (:mod:`.parallel` does so). ``suspect``: its last request got no answer,
    so it may be the one that took the target down, and only a run alone can tell; an item whose last request
    was answered was between requests when the target went down."""

    def __init__(self, where: str, transcript: Transcript, seen_down_at: float, crash: int):
        super().__init__(where)
        self.crash = crash  # which crash: the target's restarts counted once it came back from it
        self.suspect = unanswered(transcript, seen_down_at)
        last = last_sent(transcript)
        self.last = None if last is None else (last.api, last.version)  # the request it may have taken it down with
        self.sent_at = 0.0 if last is None else last.sent_at
        self.seen_down_at = seen_down_at


def command_restart(command: str, timeout_s: float = 300.0) -> Callable[[], None]:
    """How the user's supervisor brings an attached target back (``--restart-command``): a shell command that
    returns once the broker is starting; :meth:`Runner._restarted` then waits for it to answer."""
    def bring_back() -> None:
        done = subprocess.run(command, shell=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the restart command exited with status {done.returncode}")
    return bring_back


class Runner:
    """Runs cases on one target and watches that target: once it stops answering, later items end at once."""

    def __init__(self, target: Target, *, run_id: str, strict: bool = False, components: Components | None = None,
                 codec: Codec | None = None, timeout: float = 10.0):
        """``components`` come from the run's plugins (``conformance.extension``); without them, the
        bundled ones (no plugins). ``codec`` replaces only the codec."""
        components = components or bundled()
        self.target = target
        self.run_id = run_id
        self.strict = strict
        self.codec = codec or components.codec
        self.timeout = timeout
        self.step_kinds = dict(components.step_kinds)
        self.matchers = dict(components.matchers)
        self._counter = itertools.count(1)
        self._probe: Cluster | None = None
        self.down: str | None = None  # why the target no longer answers; None while it does
        self._answered = False  # the target answered ApiVersions at least once
        self._settings: dict | None = None  # the broker's settings, read when a case requires some
        self._no_authorizer: str | None = None  # why principals' cases cannot run here, once found
        self._authorizer_probed = False
        self._under_way = UnderWay()  # several threads may run items (parallel.RunAhead)
        self._restarts = 0  # how often the harness brought the target back after it stopped answering
        self.learned = Learned()  # versions that break and requests that take the target down, learnt by items
        self.crashes = 0  # crashes blamed on an item (which took the target down, alone)
        self.ran = 0  # items run to their end (a progress line says it)
        self._seen_down_at = 0.0  # when an item last found the target down (wall clock, as a transcript's)
        self._recovering = threading.Lock()
        # Brings back a target the harness cannot restart itself (an attached HOST:PORT): ``--restart-command``.
        self.bring_back: Callable[[], None] | None = None
        self.walked_ahead: WalkAhead | None = None  # set by RunAhead for its serial items (walk_ahead.py)
        self._probing = threading.Lock()
        # Topics the items created, deleted when the runner closes rather than after each item: deleting a
        # topic while other items run disturbs them on some brokers (Kafka 3.9's group coordinator forgets
        # every group whose only member is one it just asked to rejoin, on any partition's deletion), and
        # deletions are about a third of a broker's work per topic during a run.
        self._leftover_topics: list[str] = []
        self._leftover_lock = threading.Lock()

    # ---------------------------------------------------------------------- versions
    def case_versions(self, case: Case) -> list[int | None]:
        """Versions to make items for: the case's range within the codec's (target-independent)."""
        if case.api is None:
            return [None]
        return [version for version in self.codec.registry.api(case.api).versions() if version in case.versions]

    def advertised(self, api: str) -> tuple[int, int] | None:
        key = self.codec.registry.api(api).api_key
        with self._probing:  # items on several threads share the probe; a restart replaces it
            if self._probe is None:
                self._probe = self._untraced_cluster()
            return self._probe.api_versions().get(key)

    def _untraced_cluster(self, timeout: float | None = None) -> Cluster:
        """A connection to the target outside any item (its exchanges belong to no transcript)."""
        return Cluster(self.target.bootstrap, self.codec, Transcript(), timeout=timeout or self.timeout,
                       security=self.target.security)

    def close(self, *, keep_topics: bool = False) -> None:
        """Closes the probe and deletes the topics the items created, unless ``keep_topics`` (a provisioned
        target about to be discarded with them)."""
        if self._probe is not None:
            self._probe.close()
        if keep_topics:
            with self._leftover_lock:
                self._leftover_topics = []
        else:
            self.delete_finished_topics()

    def delete_finished_topics(self, *, until_gone: bool = False) -> None:
        """Deletes the topics of the items done so far (best effort, as at the run's end); ``until_gone``: and
        waits until the broker's metadata has them no more, so the next item meets none of the deletion's effects
        (on Kafka 3.9 a deletion ends the classic groups in the middle of a join: docs/explanation/verdicts.md)."""
        with self._leftover_lock:
            leftover, self._leftover_topics = self._leftover_topics, []
        if leftover:
            cluster = self._untraced_cluster()
            try:
                deleted = delete_topics(cluster, leftover)
                if until_gone and deleted:  # those it refused to delete (no right to) stay: no waiting for them
                    wait_until_gone(cluster, deleted)
            finally:
                cluster.close()

    # ---------------------------------------------------------------------- liveness
    def alive(self) -> str | None:
        """None when a fresh connection gets an ApiVersions answer, else what the target did instead."""
        cluster = self._untraced_cluster(timeout=min(self.timeout, LIVENESS_TIMEOUT_S))
        try:
            cluster.api_versions()
            return None
        except (ClientError, ClusterError, ProtocolError, OSError) as error:
            return str(error).splitlines()[0] if str(error) else type(error).__name__
        finally:
            cluster.close()

    def _ending(self) -> str:
        """How the target's process ended, where the harness owns one and it has (``; ...``), else empty."""
        ended = self.target.ended(wait=ENDING_WAIT_S)
        return f"; {ended}" if ended else ""

    def _restarted(self) -> bool:
        """Brings the target back: restarted where it can be (its data kept), else started afresh where it can
        be (``revive``: the mock), else by the user's command (:attr:`bring_back`); False where it cannot or did
        not come back."""
        if Capability.RESTART in self.target.capabilities:
            bring_back = self.target.restart
        elif Capability.REVIVE in self.target.capabilities:
            bring_back = self.target.revive
        elif self.bring_back is not None:
            bring_back = self.bring_back
        else:
            return False
        # Counted before it happens: an item that finds the target answering again must know it was restarted.
        self._restarts += 1
        self.learned.new_life()
        try:
            bring_back()
        except Exception:  # noqa: BLE001 - a failed restart leaves the target down, which is what gets reported
            return False
        with self._probing:
            if self._probe is not None:
                self._probe.close()
                self._probe = None
        # A supervisor's command may return before the broker listens; restart() and revive() return once it does.
        deadline = time.monotonic() + (BRING_BACK_WAIT_S if bring_back is self.bring_back else 0.0)
        while self.alive() is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    # ---------------------------------------------------------------------- running
    def run(self, case: Case, version: int | None, shared_restart: SharedRestart | None = None, *,
            rerun_alone: bool = False, shared_fault: SharedFault | None = None,
            alone: Callable[[], None] | None = None) -> CaseResult:
        """Runs one item; after one that may have hurt the target, checks the target still answers. Given
        ``shared_restart``, the item is one of a group sharing broker restarts (its restart steps wait there);
        given ``shared_fault``, one of the versions of its case sharing their faults (the group heals the target).
        Given ``rerun_alone`` (items running beside each other, :mod:`.parallel`), an item whose verdict a
        crash left unknown, the target being back, raises :class:`RerunAlone` instead of ending without one;
        ``alone()`` returns once no other item is under way (an item about to send a known hazard waits for that,
        :mod:`.learned`), else the item raises :class:`KnownHazard` there."""
        with self._recovering:  # never while the target is being brought back: then on the life it comes back to
            restarts = self._restarts
        if self.down is not None:
            result = self._result(case, version, Transcript(), time.monotonic())
            return self._finish(result, Outcome.ERROR, time.monotonic(), Transcript(), f"not run: {self.down}")
        where = f"{case.full_id}" + ("" if version is None else f" v{version}")
        transcript = Transcript()
        token = self._under_way.start(where, transcript)
        try:  # under way until judged: a crash names the items still being judged too
            def alone_from_now() -> None:
                if alone is not None:
                    alone()
                self._under_way.alone_from_now(token)

            result = self._run(case, version, shared_restart, transcript, shared_fault, beside_others=rerun_alone,
                               alone=alone_from_now if alone is not None else None)
            return self._judged(case, where, transcript, result, self._under_way.beside(token), restarts,
                                rerun_alone, token)
        finally:
            self._under_way.finish(token)
            self.ran += 1

    def status(self) -> dict:
        """What a progress line says of this target's run: items ran, those under way, crashes attributed."""
        return {"ran": self.ran, "under_way": self._under_way.labels(), "crashes": self.crashes}

    def _judged(self, case: Case, where: str, transcript: Transcript, result: CaseResult, beside: list[str],
                restarts: int, rerun_alone: bool, token: int) -> CaseResult:
        """The item's result once the target's health is known (see :meth:`run`)."""
        done = result.outcome.uneventful
        if self._restarts != restarts and not done:  # another item's crash: the restart, not this case, did it
            if rerun_alone:
                raise RerunAlone(where, transcript, self._seen_down_at, self._restarts)
            return self._no_verdict(result, f"no verdict: {UNDER_IT}")
        if done and not case.rough:
            self._answered = True
            return result
        seen = time.time()  # if it is down, it went down before this: what others send later is no suspect
        problem = self.alive()
        if problem is None and self._restarts != restarts and not done:  # it answers again: restarted meanwhile
            if rerun_alone:
                raise RerunAlone(where, transcript, self._seen_down_at, self._restarts)
            return self._no_verdict(result, f"no verdict: {UNDER_IT}")
        if problem is None:
            self._answered = True
            return result
        if not self._answered:  # it never answered: nothing this case did is to blame
            self.down = f"target {self.target.spec} does not answer like a Kafka broker: {problem}"
            result.outcome, result.message = Outcome.ERROR, f"{self.down}\n{result.message}".strip()
            return result
        problem += self._ending()
        with self._recovering:  # items that notice together: one restart
            if self._restarts != restarts:
                if rerun_alone:
                    raise RerunAlone(where, transcript, self._seen_down_at, self._restarts)
                return self._no_verdict(result, f"no verdict: {UNDER_IT} ({problem})")
            self._seen_down_at = seen
            restarted = self.down is None and self._restarted()
            if not restarted and beside:  # set before any other item goes on: those after it are not run
                named = "; ".join([f"{where} (last sent: {last_request(transcript)})", *self._under_way.now(but=token)])
                self.down = self.down or (f"target {self.target.spec} stopped answering while {len(beside) + 1} "
                                          f"items ran at once: {problem}; under way then: {named}")
            elif not restarted:
                self.down = self.down or f"target {self.target.spec} stopped answering after {where}: {problem}"
        then = "; the harness restarted it" if restarted else ""
        if beside:  # in a parallel run any item under way may have taken it down: the one that noticed is not blamed
            if restarted and rerun_alone:
                raise RerunAlone(where, transcript, self._seen_down_at, self._restarts)
            others = ", ".join(beside[:3]) + (", ..." if len(beside) > 3 else "")
            return self._no_verdict(result, f"no verdict: the target stopped answering while this item and "
                                            f"{len(beside)} others ran at once ({others}): {problem}{then}; this "
                                            f"item last sent {last_request(transcript)}; {NOT_KNOWN}")
        self._took_down(where, transcript)
        result.outcome, why = verdict.crashed(case, result.failure, problem, then, transcript)
        result.message = why + (f"\n{result.message}" if result.message else "")
        return result

    def _took_down(self, where: str, transcript: Transcript) -> None:
        """The item alone on the target took it down: its last request is a hazard for the rest of the run."""
        self.crashes += 1
        last = last_sent(transcript)
        if last is not None:
            log.info("%s took %s down with %s v%s: a hazard for the rest of the run", where, self.target.spec,
                     last.api, last.version)
            self.learned.took_down(last.api, last.version, where)

    @staticmethod
    def _no_verdict(result: CaseResult, why: str) -> CaseResult:
        result.outcome = Outcome.ERROR
        result.message = why + (f"\n{result.message}" if result.message else "")
        return result

    def _run(self, case: Case, version: int | None, shared_restart: SharedRestart | None,
             transcript: Transcript, shared_fault: SharedFault | None = None, *,
             beside_others: bool = False, alone: Callable[[], None] | None = None) -> CaseResult:
        started = time.monotonic()
        life = self.learned.life  # what breaks from here on is learnt only while the target lives this life
        result = self._result(case, version, transcript, started)
        try:
            if case.api is not None and version is not None:
                found = self.advertised(case.api)
                self._answered = True
                if found is None or not found[0] <= version <= found[1]:
                    shown = "not at all" if found is None else f"v{found[0]}-v{found[1]}"
                    return self._finish(result, Outcome.UNSUPPORTED, started, transcript,
                                        f"{self.target.spec} advertises {case.api} {shown}, not v{version}")
        except (ClientError, ClusterError, ProtocolError, OSError) as error:
            return self._finish(result, Outcome.ERROR, started, transcript, f"cannot read ApiVersions: {error}")
        try:  # before any step: a case must not half-run where one of its principals is missing
            for principal in case.principals:
                self.target.principal(principal)
        except CapabilityMissing as missing:
            return self._finish(result, Outcome.SKIPPED, started, transcript, str(missing))
        unfit = self._unfit(case)
        if unfit:
            return self._finish(result, Outcome.SKIPPED, started, transcript, unfit)

        suffix = f"{self.run_id[:8]}-{next(self._counter)}"  # the item's names: topics, ids, its client id
        cluster = Cluster(self.target.bootstrap, self.codec, transcript, timeout=self.timeout,
                          client_id=f"kafka-conformance-{suffix}", security=self.target.security)
        resources = Resources(cluster, case, suffix, self.target)
        context: Context | None = None
        try:
            names = resources.names()
            cluster.api_versions()
            self._answered = True
            if case.requires_config:
                names["config"] = self._config_for(case, cluster)
            if case.requires_switch:
                self._check_switches(case, cluster)
            if case.principals:
                self._check_authorizer(cluster)
            resources.create_topics({short: names["topics"][short] for short in case.topics_used})
            names["topic_ids"] = {short: resources.topic_ids.get(full) for short, full in names["topics"].items()}
            context = Context(cluster, self.target, version, case.api,
                                    {**names, "version": version}, resources.topic_ids,
                                    self.step_kinds, self.matchers, shared_restart=shared_restart,
                                    shared_fault=shared_fault,
                                    learned=ItemView(self.learned, beside_others=beside_others, life=life,
                                                     alone=alone),
                                    walked_ahead=self.walked_ahead, case_id=case.full_id)
            run_steps(context, case.steps)
            return self._ended(result, verdict.ran_to_end(case, version, context.progress), started, transcript)
        except KnownHazard:  # beside others: the item runs again alone (parallel.RunAhead)
            raise
        except Exception as error:  # noqa: BLE001 - whatever ended the item, it is judged; a harness bug fails it alone
            tested = context is not None and context.progress.tested
            return self._ended(result, verdict.ended_by(case, version, error, tested=tested), started, transcript)
        finally:
            if context is not None:
                context.close()
                remove_acls(cluster, context.acls)
                with_notes(result, context.notes)
            if case.rough and shared_fault is None:  # a group sharing faults heals once, after its round
                try:
                    self.target.heal()  # the next case finds the target whole, whatever this one left down
                except ControlFailed as failed:  # this verdict stands; the next case that needs the nodes retries
                    result.message = (f"{result.message}\n" if result.message else "") + \
                        f"the cluster was not made whole after the case: {failed}"
            with self._leftover_lock:
                self._leftover_topics += resources.created
            cluster.close()

    def _unfit(self, case: Case) -> str | None:
        """Why the target cannot run the case, where that is known before any set-up: a fault it does not
        offer, or more replicas than the brokers it was provisioned with. These are the reasons the case
        would skip for anyway, after creating its topics and running its first steps."""
        target = self.target
        for name in case.faults:
            if name == "restart" and Capability.RESTART not in target.capabilities:
                return f"target {target.spec!r} cannot restart its broker"
            if name not in ("restart", "disconnect") and not target.offers_fault(name):
                return target.why_no_fault(name)
        brokers, needed = target.provisioned_brokers(), replicas_needed(case)
        if brokers is not None and needed > brokers:
            return too_few_brokers(needed, brokers)
        return None

    def _check_authorizer(self, cluster: Cluster) -> None:
        """Principals' cases need an authorizer: DescribeAcls answers SECURITY_DISABLED where there is none
        (asked once; a target without DescribeAcls, or one that refuses the harness, is not judged here)."""
        if not self._authorizer_probed:
            self._authorizer_probed = True
            if cluster.version_range("DescribeAcls") is not None:
                body = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                        "principal_filter": "User:kafka-conformance-probe", "host_filter": None, "operation": 1,
                        "permission_type": 1}
                response = cluster.connection().request("DescribeAcls", cluster.best_version("DescribeAcls"), body,
                                                        step="setup").answer
                if error_name(response.get("error_code", 0)) == "SECURITY_DISABLED":
                    self._no_authorizer = (f"{self.target.spec} has no authorizer (DescribeAcls: SECURITY_DISABLED): "
                                           "every principal may do anything, so no case about refusals can run")
        if self._no_authorizer:
            raise Skip(self._no_authorizer)

    def _config_for(self, case: Case, cluster: Cluster) -> dict:
        """The settings the case requires, read from the target once; Skip when they do not allow it."""
        try:
            if self._settings is None:
                self._settings = broker_config.read_broker_config(cluster)
            return broker_config.check(case.requires_config, self._settings, self.target.spec)
        except broker_config.ConfigUnmet as unmet:
            raise Skip(str(unmet)) from None

    def _check_switches(self, case: Case, cluster: Cluster) -> None:
        """Skip where the target reports a setting that turns the checked behaviour off. A target whose settings
        cannot be read, or that has no such setting, has no way to turn it off: it is held to it."""
        try:
            if self._settings is None:
                self._settings = broker_config.read_broker_config(cluster)
        except broker_config.ConfigUnmet:
            self._settings = {}
        off = broker_config.switched_off(case.requires_switch, self._settings, self.target.spec)
        if off:
            raise Skip(off)

    def _result(self, case: Case, version, transcript: Transcript, started: float) -> CaseResult:
        return CaseResult.for_case(case, version, target=self.target.spec, target_version=self.target.version,
                                   target_name=self.target.name, outcome=Outcome.ERROR, run_id=self.run_id)

    @classmethod
    def _ended(cls, result: CaseResult, judged: verdict.Judged, started: float, transcript: Transcript) -> CaseResult:
        result.failure, result.root_cause = judged.failure, judged.root_cause
        return cls._finish(result, judged.outcome, started, transcript, judged.message)

    @staticmethod
    def _finish(result: CaseResult, outcome: Outcome, started: float, transcript: Transcript,
                message: str) -> CaseResult:
        result.outcome = outcome
        result.message = message
        result.duration_s = time.monotonic() - started
        result.transcript = transcript.to_json()
        result.transcript_source = transcript
        return result


def with_notes(result: CaseResult, notes: list[str]) -> None:
    """Adds the departures a set-up or check step met on another API and version than the one under test
    (observe.py): each is that API's finding, named once, never this item's verdict."""
    if notes:
        lines = "\n".join(f"finding on {note}" for note in notes)
        result.message = f"{result.message}\n{lines}".strip()


def remove_acls(cluster: Cluster, created: list[dict]) -> None:
    """Deletes exactly the ACL bindings a case created (best effort: a cleanup never changes a verdict)."""
    if not created:
        return
    filters = [{"resource_type_filter": acl["resource_type"], "resource_name_filter": acl["resource_name"],
                "pattern_type_filter": acl.get("resource_pattern_type", 3), "principal_filter": acl["principal"],
                "host_filter": acl.get("host", "*"), "operation": acl["operation"],
                "permission_type": acl["permission_type"]} for acl in created]
    created.clear()
    try:
        version = cluster.best_version("DeleteAcls")
        cluster.connection().request("DeleteAcls", version, {"filters": filters}, step="cleanup", timeout=6)
    except Exception:  # noqa: BLE001 - cleanup never turns a verdict into an error
        pass
