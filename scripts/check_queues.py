#!/usr/bin/env python3
"""Refuses, before `sam build`, queue lists that template.yaml would turn into a failed deploy.

    check_queues.py QUEUES [ADOPTED] [--prefix P] [--region R] [--kms-keys ARN,...]
                    [--params "K=V ..." --stack NAME]

- Each name is an SQS queue name: 1 to 80 characters from [A-Za-z0-9_-], with `.fifo` at the
  end of a FIFO queue's name.
- A queue is named once, in QUEUES (its table is created) or in ADOPTED (its table exists).
- The template's logical ids keep only the alphanumeric characters of a name (`&{QueueName}`),
  so `jobs-fifo` and `jobs.fifo`, or `orders-eu` and `orders_eu`, in one list would be one
  resource: such names are refused together, naming both. (The two lists' ids never meet:
  `EnqueueCreated…` and `EnqueueAdopted…`, likewise for the poller.)
- Every table name ({prefix}{queue}, or {stack}.{queue} with TableScope=stack, which takes no
  TablePrefix) fits DynamoDB's 3 to 255 characters, the functions' environment fits Lambda's
  4 KB, a stack serves at most 100 queues, and each role's inline
  policies fit IAM's 10,240 characters in the deploy's partition (scripts/iam_budget.py; without
  --region, nor AWS_REGION or AWS_DEFAULT_REGION, in every partition at its longest region).
- The other parameters fit each other (scripts/check_params.py), as PARAMS gives them or, left
  out, as the stack has them now.
- CrossAccountGrants names the stack's aliases and other accounts' principals, and a queue's
  own alias only once the stack has it (scripts/check_grants.py); every grant on the enqueue
  function names one of its aliases (scripts/iam_budget.py).
- An update fits IAM midway too: CloudFormation holds the stack's current policies and the new
  ones at once, so renaming, moving or swapping queues can pass the limit when neither end
  does. Checked against the stack's processed template, when it can be read.
Exit status 0 when the lists deploy, 2 with one line per problem otherwise.
"""

import argparse
from pathlib import Path
import os
import re
import sys

import check_grants
import check_params
import iam_budget

SQS_NAME = re.compile(r"^[A-Za-z0-9_-]{1,75}(\.fifo)?$|^[A-Za-z0-9_-]{1,80}$")


def problems(queues, adopted):
    out = []
    named = [(q, "QUEUES") for q in queues] + [(q, "ADOPT") for q in adopted]
    if not named:
        out.append("QUEUES and ADOPT name no queue; give at least one")
    seen = {}
    # Logical ids per list: QUEUES give Table{id}, EnqueueCreated{id} and PollerCreated{id};
    # ADOPT gives EnqueueAdopted{id} and PollerAdopted{id}.
    ids = {"QUEUES": {}, "ADOPT": {}}
    for name, where in named:
        if not SQS_NAME.match(name):
            out.append(f"{where}: '{name}' is not an SQS queue name (1-80 characters from A-Z a-z 0-9 _ -, "
                       "a FIFO queue's ending in .fifo)")
            continue
        if name in seen:
            out.append(f"{where}: '{name}' is named twice (also in {seen[name]}); a queue is in QUEUES "
                       "(its table is created) or in ADOPT (its table exists), once")
            continue
        seen[name] = where
        logical = "".join(c for c in name if c.isalnum())
        if logical in ids[where]:
            resources = f"Table{logical}, EnqueueCreated{logical}" if where == "QUEUES" else f"EnqueueAdopted{logical}"
            out.append(f"{where}: '{name}' and '{ids[where][logical]}' become the same resource ids ({resources}): "
                       "the template keeps only letters and digits; rename one queue or deploy them in separate "
                       "stacks")
        else:
            ids[where][logical] = name
    # A created queue's own aliases of enqueue are {key}--send and {key}--view, with "." as "-":
    # two created queues of one key (jobs.fifo, jobs-fifo) are refused above already, as their
    # ids keep only letters and digits; an adopted queue has no aliases of its own.
    return out


def midway(args, queues, adopted, current):
    """The update from the stack as it is now (`current`: its parameters) to these lists."""
    template, why = check_params.current_template(args.stack, args.region)
    if template is None:
        print(f"make deploy: the template of {args.stack} could not be read ({why[:200]}); the update is "
              "checked at its end state only", file=sys.stderr)
        return []
    deploy = {"queues": queues, "adopted": adopted, "prefix": args.prefix, "kms_keys": split(args.kms_keys),
              "table_key": args.table_key, "scope": args.scope, "stack": args.stack}
    now = {"queues": split(current.get("QueueNames", "")), "adopted": split(current.get("AdoptedQueueNames", "")),
           "prefix": current.get("TablePrefix", "sqs-waiter-"), "kms_keys": split(current.get("QueueKmsKeyArns", "")),
           "table_key": current.get("TableKmsKeyArn", ""), "scope": current.get("TableScope", "prefix"),
           "stack": args.stack}
    return iam_budget.update_problems(deploy, now, template, region=args.region)


def grant_problems(queues, adopted, overrides, current):
    """CrossAccountGrants as this deploy gives it (else as the stack has it), checked against the
    aliases the stack makes and, for a queue's own, the ones it has now; then every grant on
    the enqueue function of the deployment checked to name an alias."""
    given = overrides.get("CrossAccountGrants", (current or {}).get("CrossAccountGrants", ""))
    # Empty entries kept: CloudFormation keeps them too, and each would be a grant of nothing.
    grants = given.split(",") if given.strip() else []
    makes = overrides.get("QueueAliases", (current or {}).get("QueueAliases", "true")) == "true"
    deployed = None
    if current is not None:
        # A stack without the parameter was deployed before the aliases existed: it has none.
        had = current.get("QueueAliases") == "true"
        deployed = check_grants.queue_aliases(split(current.get("QueueNames", "")), had)
    found = check_grants.problems(grants, queues, makes, deployed)
    if not found:
        found = iam_budget.grant_problems(queues, adopted, {"QueueAliases": "true" if makes else "false",
                                                            "CrossAccountGrants": ",".join(grants)})
    return found


def split(value):
    return [q.strip() for q in value.split(",") if q.strip()]


def main(argv):
    parser = argparse.ArgumentParser(prog="check_queues.py", description=__doc__.strip().splitlines()[0])
    parser.add_argument("queues")
    parser.add_argument("adopted", nargs="?", default="")
    parser.add_argument("--prefix", default="sqs-waiter-", help="TablePrefix (the template's default)")
    parser.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None)
    parser.add_argument("--kms-keys", default="", help="QueueKmsKeyArns")
    parser.add_argument("--table-key", default="", help="TableKmsKeyArn")
    parser.add_argument("--params", default=None, help="PARAMS, as make passes them to SAM")
    parser.add_argument("--stack", default="sqs-waiter", help="the stack's name, for its current parameters")
    parser.add_argument("--template", default=None,
                        help="the template deployed (a release's, for make deploy RELEASE=); default template.yaml")
    args = parser.parse_args(argv[1:])
    if args.template:
        # Every check below reads the template through iam_budget.load_template().
        iam_budget.TEMPLATE_PATH = Path(args.template).resolve()
    args.scope = "prefix"
    queues, adopted = split(args.queues), split(args.adopted)
    current = {}
    if args.params is not None:
        current, why = check_params.current_parameters(args.stack, args.region)
        if why:
            print(f"make deploy: the current parameters of {args.stack} could not be read ({why[:200]}); "
                  "those not in PARAMS are checked at template.yaml's defaults, the update at its end state",
                  file=sys.stderr)
        # A parameter left out keeps the stack's value (UsePreviousValue).
        overrides = check_params.parse_overrides(args.params)
        args.prefix = overrides.get("TablePrefix", (current or {}).get("TablePrefix", args.prefix))
        args.kms_keys = overrides.get("QueueKmsKeyArns", (current or {}).get("QueueKmsKeyArns", args.kms_keys))
        args.table_key = overrides.get("TableKmsKeyArn", (current or {}).get("TableKmsKeyArn", args.table_key))
        args.scope = overrides.get("TableScope", (current or {}).get("TableScope", "prefix"))
    found = problems(queues, adopted)
    if not found:
        # Before the budget, which expands the loops: a bad entry (or queue name) would break them.
        found = grant_problems(queues, adopted, overrides if args.params is not None else {}, current)
    if args.scope == "stack" and args.prefix != "sqs-waiter-":
        found.append(f"TablePrefix ({args.prefix}) is given with TableScope=stack, whose tables are {args.stack}.{{queue}}: "
                     "leave TablePrefix out (docs/tables.md \"Table scope\")")
    if not found:
        found = iam_budget.problems(queues, adopted, args.prefix, region=args.region, kms_keys=split(args.kms_keys),
                                    table_key=args.table_key, scope=args.scope, stack=args.stack,
                                    values={**(current or {}), **overrides} if args.params is not None else None)
    if args.params is not None:
        found += check_params.problems(check_params.effective(overrides, current, iam_budget.load_template()))
        found += check_params.lowered(overrides, current)
        found += check_params.projection_changed(overrides, current)
        found += check_params.scope_changed(overrides, current)
        if current and not found:
            found += midway(args, queues, adopted, current)
    for p in found:
        print(f"make deploy: {p}", file=sys.stderr)
    return 2 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
