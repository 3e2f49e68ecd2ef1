"""CrossAccountGrants checked before `sam build`: each entry ALIAS=PRINCIPAL gives another
account's principal one alias of the enqueue function (template.yaml, docs/security.md).

- ALIAS is an alias the stack makes: `send`, `view`, `operate`, or a created queue's own
  `{queue}--send` or `{queue}--view` (".fifo" as "-fifo") while QueueAliases is true.
- PRINCIPAL is an account id (12 digits) or the ARN of an account's root, a role or a user.
- The template names each grant's resource by the entry's letters and digits, so two entries
  that keep the same ones would be one resource, and an id is at most 255 characters.
- A queue's own alias is granted only once the stack has it: the grant names the alias by ARN,
  which makes CloudFormation wait for no alias, and AddPermission on a missing alias fails.
"""

import re

CLASS_ALIASES = ("send", "view", "operate")
QUEUE_CLASSES = ("send", "view")
PRINCIPAL = re.compile(r"^\d{12}$|^arn:aws(-cn|-us-gov)?:iam::\d{12}:(root|role/\S+|user/\S+)$")
# CloudFormation: a logical id is at most 255 characters.
LOGICAL_ID_MAX = 255
GRANT_ID = "EnqueueGrant"


def queue_aliases(queues, makes_aliases):
    """The aliases of these created queues' own, when QueueAliases is true."""
    if not makes_aliases:
        return set()
    return {f"{q.replace('.', '-')}--{c}" for q in queues for c in QUEUE_CLASSES}


def problems(entries, queues, makes_aliases, deployed_aliases=None):
    """One sentence per problem of these entries ([] when they deploy). `deployed_aliases`: the
    queue aliases the stack has now, None when that is not known (then not checked)."""
    out = []
    own = queue_aliases(queues, makes_aliases)
    ids = {}
    for entry in entries:
        if entry != entry.strip() or not entry:
            out.append(f"CrossAccountGrants: '{entry}' is empty or has spaces around it (a comma too many?): "
                       "each entry is ALIAS=PRINCIPAL, nothing else")
            continue
        alias, sep, principal = entry.partition("=")
        if not sep or "=" in principal:
            out.append(f"CrossAccountGrants: '{entry}' is not ALIAS=PRINCIPAL (for example "
                       "orders--send=arn:aws:iam::123456789012:role/producer)")
            continue
        if alias not in CLASS_ALIASES and alias not in own:
            why = ("QueueAliases is false, so only send, view and operate exist" if not makes_aliases
                   else f"the stack's aliases are send, view, operate and each created queue's {{queue}}--send and "
                        "{queue}--view")
            out.append(f"CrossAccountGrants: '{entry}' names the alias '{alias}', which this stack does not make: {why}")
            continue
        if not PRINCIPAL.match(principal):
            out.append(f"CrossAccountGrants: '{entry}' names the principal '{principal}': give an account id "
                       "(12 digits) or the ARN of an account's root, a role or a user")
            continue
        logical = GRANT_ID + "".join(c for c in entry if c.isalnum())
        if len(logical) > LOGICAL_ID_MAX:
            out.append(f"CrossAccountGrants: '{entry}' makes a resource id of {len(logical)} characters, over "
                       f"CloudFormation's {LOGICAL_ID_MAX}: grant a shorter ARN (the role's account id, say)")
        elif logical in ids and ids[logical] == entry:
            out.append(f"CrossAccountGrants: '{entry}' is named twice")
        elif logical in ids:
            out.append(f"CrossAccountGrants: '{entry}' and '{ids[logical]}' make one resource id ({logical}): the "
                       "template keeps only letters and digits; name the principal otherwise")
        else:
            ids[logical] = entry
        if alias in own and deployed_aliases is not None and alias not in deployed_aliases:
            out.append(f"CrossAccountGrants: '{entry}' grants the alias '{alias}', which this update creates: deploy "
                       "the queue first, then its grant (AddPermission needs the alias, and CloudFormation cannot "
                       "be told to wait for it)")
    return out
