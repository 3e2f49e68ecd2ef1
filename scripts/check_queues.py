#!/usr/bin/env python3
"""Refuses, before `sam build`, queue lists that template.yaml would turn into a failed deploy.

    check_queues.py QUEUES [ADOPTED]

- Each name is an SQS queue name: 1 to 80 characters from [A-Za-z0-9_-], with `.fifo` at the
  end of a FIFO queue's name.
- A queue is named once, in QUEUES (its table is created) or in ADOPTED (its table exists).
- The template's logical ids keep only the alphanumeric characters of a name (`&{QueueName}`),
  so `jobs-fifo` and `jobs.fifo`, or `orders-eu` and `orders_eu`, in one list would be one
  resource: such names are refused together, naming both. (The two lists' ids differ: `Send…`
  and `SendAdopted…`.)
Exit status 0 when the lists deploy, 2 with one line per problem otherwise.
"""

import re
import sys

SQS_NAME = re.compile(r"^[A-Za-z0-9_-]{1,75}(\.fifo)?$|^[A-Za-z0-9_-]{1,80}$")


def problems(queues, adopted):
    out = []
    named = [(q, "QUEUES") for q in queues] + [(q, "ADOPT") for q in adopted]
    if not named:
        out.append("QUEUES and ADOPT name no queue; give at least one")
    seen = {}
    # Logical ids per list: QUEUES give Table{id} and Send{id}, ADOPT gives SendAdopted{id}.
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
            resources = f"Table{logical}, Send{logical}" if where == "QUEUES" else f"SendAdopted{logical}"
            out.append(f"{where}: '{name}' and '{ids[where][logical]}' become the same resource ids ({resources}): "
                       "the template keeps only letters and digits; rename one queue or deploy them in separate "
                       "stacks")
        else:
            ids[where][logical] = name
    return out


def split(value):
    return [q.strip() for q in value.split(",") if q.strip()]


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    found = problems(split(argv[1]), split(argv[2]) if len(argv) == 3 else [])
    for p in found:
        print(f"make deploy: {p}", file=sys.stderr)
    return 2 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
