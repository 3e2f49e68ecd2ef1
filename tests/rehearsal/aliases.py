"""The enqueue function's class aliases in a deployed stack (issue 73): LocalStack hands the
function the alias the caller named, by `NAME:ALIAS` and by `Qualifier`, and the function allows
a producer's alias of a queue its jobs there and refuses it the rest."""

import json
import uuid


def through_aliases(rt, stack, enqueue, queue, check):
    """The stack's class aliases and the queue's own (issue 73), SAM's or the CDK's: LocalStack
    hands the function the alias the caller named, and the function allows a producer's alias
    of the queue its jobs there, and refuses it an operator's action."""
    aliases = sorted(a["Name"] for a in rt.lam.list_aliases(FunctionName=enqueue)["Aliases"])
    check({"send", "view", "operate"} <= set(aliases), f"{stack}: the class aliases ({aliases})")
    # A created queue has aliases of its own; an adopted one's producers (SAM) take `send`.
    own = f"{queue.replace('.', '-')}--send"
    producer = f"{enqueue}:{own}" if own in aliases else f"{enqueue}:send"
    # An id of its own each time: a stack is rehearsed more than once (a cancelled id's
    # record makes a second enqueue of it a duplicate).
    job_id = f"through-alias-{uuid.uuid4().hex[:8]}"
    job = {"queue": queue, "job_id": job_id, "message_body": "through-alias", "delay_seconds": 3600}
    error, reply = rt.invoke(producer, job)
    check(error is None and reply.get("status") == "scheduled",
          f"{stack}: through {producer.split(':')[-1]} a job is scheduled on {queue} (got {error}: {reply})")
    error, reply = rt.invoke(producer, {"action": "pause", "queue": queue})
    check(error is not None and reply.get("errorType") == "AccessDenied",
          f"{stack}: through {producer.split(':')[-1]} pause is refused AccessDenied (got {error}: {reply})")
    # The same alias named by `Qualifier` beside the unqualified name (docs/security.md):
    # `stats`, which a producer may not call and the unqualified function may.
    out = rt.lam.invoke(FunctionName=enqueue, Qualifier=producer.split(":")[-1],
                        Payload=json.dumps({"action": "stats", "queue": queue}).encode())
    reply = json.loads(out["Payload"].read() or b"{}")
    check(bool(out.get("FunctionError")) and reply.get("errorType") == "AccessDenied",
          f"{stack}: with Qualifier={producer.split(':')[-1]} too, stats is refused AccessDenied "
          f"(got {out.get('FunctionError')}: {reply})")
    # The producer's own cancel leaves the queue as it was for the checks after this one.
    error, reply = rt.invoke(producer, {"action": "cancel", "queue": queue, "job_id": job_id})
    check(error is None and reply.get("status") == "cancelled", f"{stack}: the producer cancels its job ({reply})")


# Another account's role, granted a queue's producer alias through its resource policy.
CROSS_ACCOUNT_GRANT = "orders--send=arn:aws:iam::111111111111:role/producer"


def cross_account_grant(lam, enqueue, grant, check):
    """CrossAccountGrants' entry is a statement of its alias's resource policy (AddPermission
    with Qualifier), and the unqualified function's policy does not name the principal."""
    alias, principal = grant.split("=", 1)

    def principals(**qualifier):
        try:
            policy = json.loads(lam.get_policy(FunctionName=enqueue, **qualifier)["Policy"])
        except lam.exceptions.ResourceNotFoundException:
            return []
        return [(s.get("Principal", {}).get("AWS"), s.get("Resource")) for s in policy.get("Statement", [])]

    on_alias = principals(Qualifier=alias)
    check(any(p == principal and str(r).endswith(f":{alias}") for p, r in on_alias),
          f"CrossAccountGrants: {principal} may invoke {alias} (its policy: {on_alias})")
    check(all(p != principal for p, _ in principals()),
          "CrossAccountGrants: the unqualified function's policy does not name the other account's role")
