"""IAM's inline-policy budget for a SAM deployment of template.yaml: one function, used by
scripts/check_queues.py (which `make deploy` runs before `sam build`) and by the template tests.

With TableScope=prefix the template grants each role exact ARNs: per managed queue, its table,
the table's `scheduler-perform_at-index` and the queue (docs/deploy.md "IAM"); with stack, three
policies whose queue statement grows with each name (docs/tables.md "Table scope"). IAM holds
all of a role's inline policies in 10,240 characters, white space not counted, and Lambda a
function's environment (which lists the queues) in 4 KB. So the queue count a SAM stack can hold
depends on the scope, the queue names, the table prefix or stack name, the partition and the
region; this module expands the template for given lists and measures each role, the
environment and the stack's resources, as AWS will.

Quota: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html
"""

import fnmatch
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_PATH = ROOT / "template.yaml"

# IAM: the aggregate of a role's inline policies, in characters without white space.
ROLE_INLINE_POLICY_CHARS = 10_240
# DynamoDB: a table name is 3 to 255 characters.
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html
TABLE_NAME_MIN, TABLE_NAME_MAX = 3, 255
# Lambda: a function's environment variables, keys and values together, in bytes.
# https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
LAMBDA_ENVIRONMENT_BYTES = 4096
# CloudFormation: resources per stack (the template after the transforms).
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html
STACK_RESOURCES = 500
ROLES = ("EnqueueRole", "PollerRole")
LISTS = ("QueueNames", "AdoptedQueueNames")
# Every parameter a loop runs over: the two queue lists and the cross-account grants.
LOOPED = LISTS + ("CrossAccountGrants",)
ENQUEUE = "EnqueueFunction"

# The longest region name of each partition is what a deploy is checked against when its
# region is not known (14 characters: ap-southeast-5, cn-northwest-1; us-gov-west-1 is 13).
PARTITIONS = {"aws": "ap-southeast-5", "aws-cn": "cn-northwest-1", "aws-us-gov": "us-gov-west-1"}
ACCOUNT = "123456789012"
# CloudFormation: a stack name is at most 128 characters, letters, digits and "-", never ".":
# with TableScope=stack its tables are {stack}.{queue}. Budgets with no stack name given take
# the longest.
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html
STACK_NAME_MAX = 128
LONGEST_STACK = "S" * STACK_NAME_MAX
# How many queues a stack serves, SAM or CDK: the tests measure both at this count of
# 80-character names, and make deploy and the construct refuse one more.
MAX_QUEUES = 100
# A generated physical name in an ARN (a log group, the failure queue): CloudFormation builds it
# from the stack name (up to 128 characters, truncated), the logical id and a random suffix.
GENERATED_ARN = "x" * 150


def partition_of(region):
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def load_template():
    from cfnlint.decode import cfn_yaml

    return json.loads(json.dumps(cfn_yaml.load(str(TEMPLATE_PATH))))


def alphanumeric(value):
    """What `&{Identifier}` makes of a loop value in a logical id."""
    return "".join(c for c in value if c.isalnum())


def substitute(obj, name, value):
    """The body of one Fn::ForEach iteration, as AWS::LanguageExtensions does it (and SAM CLI's
    port of it, samcli/lib/cfn_language_extensions): `${name}` and `&{name}` in every string,
    keys included, and `{"Ref": name}`."""
    if isinstance(obj, str):
        return obj.replace("${" + name + "}", value).replace("&{" + name + "}", alphanumeric(value))
    if isinstance(obj, list):
        return [substitute(o, name, value) for o in obj]
    if not isinstance(obj, dict):
        return obj
    if obj == {"Ref": name}:
        return value
    return {substitute(k, name, value): substitute(v, name, value) for k, v in obj.items()}


def mapped_list(collection, mappings, values):
    """A loop's `Fn::FindInMap [map, !Ref parameter, key]` collection for the parameter's value
    in `values` (as CloudFormation gives a parameter: a string), or None if it is not one."""
    args = collection.get("Fn::FindInMap") if isinstance(collection, dict) else None
    if not (isinstance(args, list) and len(args) == 3 and isinstance(args[1], dict)
            and args[1].get("Ref") in (values or {}) and mappings):
        return None
    items = mappings.get(args[0], {}).get(str(values[args[1]["Ref"]]), {}).get(args[2])
    if not (isinstance(items, list) and all(isinstance(item, str) for item in items)):
        raise ValueError(f"{collection} finds no list of strings for {args[1]['Ref']}={values[args[1]['Ref']]}")
    return items


def expand_loops(resources, lists, mappings=None, values=None):
    """`Resources` with every `Fn::ForEach` over a list parameter expanded for `lists`
    ({parameter: [item, ...]}: the queue lists, CrossAccountGrants), every loop over a literal list over its items, and
    every loop over a mapping's list (PollerSchedules: `Fn::FindInMap [PollerGroupIds, !Ref
    PollerGroups, Groups]`) over the list `mappings` holds for the parameter's value in
    `values`. Raises ValueError on a loop over anything else, or on an id that two iterations
    (or a loop and a fixed resource) would share."""
    out = {}
    # A deployment that gives no grants has the parameter's default, the empty list.
    lists = {"CrossAccountGrants": [""], **lists}
    for key, body in resources.items():
        if not key.startswith("Fn::ForEach::"):
            if key in out:
                raise ValueError(f"{key} is also an id a loop makes")
            out[key] = body
            continue
        name, collection, bodies = body
        if isinstance(collection, list) and all(isinstance(item, str) for item in collection):
            items = collection
        elif isinstance(collection, dict) and collection.get("Ref") in lists:
            items = lists[collection["Ref"]]
        elif (mapped := mapped_list(collection, mappings, values)) is not None:
            items = mapped
        else:
            raise ValueError(f"{key} loops over {collection}; only {', '.join(lists)}, literal lists"
                             " and mapped lists of given parameters are expanded")
        for queue in items:
            for pattern, resource in bodies.items():
                logical = pattern.replace("${" + name + "}", queue).replace("&{" + name + "}", alphanumeric(queue))
                if logical in out or logical == pattern:
                    raise ValueError(f"{key} expands {pattern} to a duplicate or fixed id {logical}")
                out[logical] = substitute(resource, name, queue)
    return out


class Resolver:
    """The intrinsics IAM policies use, for one deployment. `getatt(logical, attribute)` answers
    `Fn::GetAtt` (a generated ARN by default); `unknown(name)` a name the deployment does not
    give (by default that is an error)."""

    def __init__(self, names, conditions, getatt=None, unknown=None):
        self.names, self.conditions = names, conditions
        self.getatt = getatt or (lambda logical, attribute: GENERATED_ARN)
        self.unknown = unknown

    def name(self, n):
        if n in self.names:
            return self.names[n]
        if "." in n:  # ${Logical.Attribute} in Fn::Sub
            return self.getatt(*n.split(".", 1))
        if self.unknown is None:
            raise KeyError(n)
        return self.unknown(n)

    def __call__(self, v):
        if isinstance(v, list):
            return [x for x in (self(x) for x in v) if x is not NO_VALUE]
        if not isinstance(v, dict):
            return v
        if "Fn::Sub" in v:
            text, extra = (v["Fn::Sub"], {}) if isinstance(v["Fn::Sub"], str) else v["Fn::Sub"]
            extra = {k: self(x) for k, x in extra.items()}
            return re.sub(r"\$\{([^}!]+)\}",
                          lambda m: str(extra[m.group(1)] if m.group(1) in extra else self.name(m.group(1))), text)
        if "Ref" in v:
            return NO_VALUE if v["Ref"] == "AWS::NoValue" else self.name(v["Ref"])
        if "Fn::GetAtt" in v:
            att = v["Fn::GetAtt"]
            logical, attribute = att if isinstance(att, list) else att.split(".", 1)
            return self.getatt(logical, attribute)
        if "Fn::Join" in v:
            sep, parts = v["Fn::Join"]
            parts = self(parts)
            return sep.join(parts) if isinstance(parts, list) else str(parts)
        if "Fn::Split" in v:
            sep, text = v["Fn::Split"]
            return str(self(text)).split(sep)
        if "Fn::Select" in v:
            index, items = v["Fn::Select"]
            return self(items)[int(index)]
        if "Fn::If" in v:
            cond, yes, no = v["Fn::If"]
            return self(yes if self.conditions.get(cond) else no)
        # A key whose value is AWS::NoValue is left out, as CloudFormation does.
        return {k: x for k, x in ((k, self(x)) for k, x in v.items()) if x is not NO_VALUE}


NO_VALUE = object()


def conditions_for(conditions, names):
    """Each condition's value in a deployment with these names (a name not given reads as "")."""

    def ev(c):
        if isinstance(c, dict):
            ((k, v),) = c.items()
            if k == "Fn::Not":
                return not ev(v[0])
            if k == "Fn::Equals":
                # CloudFormation gives every parameter as a string: `0` and "0" are equal.
                a, b = (ev(x) for x in v)
                return str(a) == str(b)
            if k == "Fn::And":
                return all(ev(x) for x in v)
            if k == "Fn::Or":
                return any(ev(x) for x in v)
            if k == "Condition":
                return ev(conditions[v])
            if k == "Ref":
                value = names.get(v, "")
                return ",".join(value) if isinstance(value, list) else value
            if k == "Fn::Join":
                sep, parts = v
                parts = ev(parts) if isinstance(parts, dict) else [ev(p) for p in parts]
                return sep.join(parts if isinstance(parts, list) else parts.split(","))
        return c

    return {name: bool(ev(c)) for name, c in conditions.items()}


def parameter_values(template, queues, adopted, given):
    """The names a deployment's intrinsics resolve: the two lists, `given`, else each
    parameter's default."""
    names = {"QueueNames": list(queues) or [""], "AdoptedQueueNames": list(adopted) or [""], **given}
    for name, p in template["Parameters"].items():
        names.setdefault(name, p.get("Default", ""))
        # A CommaDelimitedList given as CloudFormation gives it, a string ("" is [""]).
        if p.get("Type") == "CommaDelimitedList" and isinstance(names[name], str):
            names[name] = names[name].split(",")
    return names


def expanded(template, names):
    """The deployment's conditions, and its resources with every loop expanded, for these
    parameter values (`parameter_values`)."""
    conditions = conditions_for(template.get("Conditions", {}), names)
    resources = expand_loops(template["Resources"], {k: names[k] for k in LOOPED}, template.get("Mappings"), names)
    return conditions, resources


def table_names(queues, prefix="sqs-waiter-", scope="prefix", stack=LONGEST_STACK):
    """The tables of these queues: {TablePrefix}{q}, or with TableScope=stack {stack}.{q}."""
    return [f"{stack}.{q}" if scope == "stack" else prefix + q for q in queues]


def role_policies(queues, adopted=(), prefix="sqs-waiter-", partition="aws", region=None,
                  kms_keys=(), template=None, table_key="", scope="prefix", stack=LONGEST_STACK):
    """{role: [(policy name, resolved policy document)]}: every inline policy each function's
    role gets when the template is deployed with these lists."""
    template = template or load_template()
    region = region or PARTITIONS[partition]
    names = parameter_values(template, queues, adopted, {
        "AWS::Partition": partition, "AWS::Region": region, "AWS::AccountId": ACCOUNT, "TablePrefix": prefix,
        "QueueKmsKeyArns": list(kms_keys) or [""], "TableKmsKeyArn": table_key, "TableScope": scope,
        "AWS::StackName": stack})
    conditions, resources = expanded(template, names)
    resolve = Resolver(names, conditions)
    out = {}
    for role in ROLES:
        docs = [(p["PolicyName"], p["PolicyDocument"]) for p in resources[role]["Properties"].get("Policies", [])]
        for r in resources.values():
            if r.get("Type") != "AWS::IAM::Policy" or {"Ref": role} not in r["Properties"].get("Roles", []):
                continue
            if r.get("Condition") and not conditions[r["Condition"]]:
                continue
            docs.append((r["Properties"]["PolicyName"], r["Properties"]["PolicyDocument"]))
        out[role] = [(resolve(n), resolve(d)) for n, d in docs]
    return out


def environment_bytes(queues, adopted=(), prefix="sqs-waiter-", template=None, scope="prefix", stack=LONGEST_STACK):
    """The functions' environment (the template's Globals) as Lambda counts it, for these lists
    and the other parameters at their defaults."""
    template = template or load_template()
    names = parameter_values(template, queues, adopted, {"TablePrefix": prefix, "TableScope": scope,
                                                         "AWS::StackName": stack})
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    resolved = Resolver(names, conditions_for(template.get("Conditions", {}), names))(env)
    return sum(len(k.encode()) + len(str(v).encode()) for k, v in resolved.items())


def resource_count(queues, adopted=(), values=None, template=None):
    """The resources CloudFormation creates for this deployment: the template's loops expanded,
    those whose condition holds, and what the SAM transform makes of each function (the
    function, and its EventInvokeConfig where it has one; test_scope checks this against
    aws-sam-translator)."""
    template = template or load_template()
    # The lists are the ones given, not a stack's current ones among `values`.
    names = parameter_values(template, queues, adopted, {k: v for k, v in (values or {}).items() if k not in LISTS})
    conditions, resources = expanded(template, names)
    count = 0
    for r in resources.values():
        if r.get("Condition") and not conditions[r["Condition"]]:
            continue
        count += 1
        if r["Type"] == "AWS::Serverless::Function" and "EventInvokeConfig" in r.get("Properties", {}):
            count += 1
    return count


def enqueue_grants(queues, adopted=(), values=None, template=None):
    """({alias name}, [(where, ARN, who)]): the aliases of the enqueue function this deployment
    makes, and every grant of lambda:InvokeFunction that reaches the function: each
    AWS::Lambda::Permission on it (resource policies) and each Allow statement of any policy
    document whose actions and resources match it, wildcards, NotAction and NotResource
    included. The function's ARN is `arn:aws:lambda:REGION:ACCOUNT:function:EnqueueFunction`."""
    template = template or load_template()
    region = PARTITIONS["aws"]
    names = parameter_values(template, queues, adopted, {"AWS::Partition": "aws", "AWS::Region": region,
                                                         "AWS::AccountId": ACCOUNT, **(values or {})})
    conditions, resources = expanded(template, names)
    live = {k: r for k, r in resources.items() if not r.get("Condition") or conditions[r["Condition"]]}
    function_arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{ENQUEUE}"
    getatt = lambda logical, attribute: (  # noqa: E731
        f"arn:aws:lambda:{region}:{ACCOUNT}:function:{logical}" if attribute == "Arn" else GENERATED_ARN)
    resolve = Resolver({**names, ENQUEUE: ENQUEUE}, conditions, getatt, unknown=lambda n: f"<{n}>")
    aliases = {}
    for logical, r in live.items():
        if r["Type"] == "AWS::Lambda::Alias" and r["Properties"].get("FunctionName") == {"Ref": ENQUEUE}:
            aliases[logical] = resolve(r["Properties"]["Name"])
    resolve.names.update({logical: f"{function_arn}:{name}" for logical, name in aliases.items()})
    grants = []
    for logical, r in live.items():
        props = r.get("Properties", {})
        if r["Type"] == "AWS::Lambda::Permission":
            target = str(resolve(props.get("FunctionName")))
            # FunctionName takes the name or the ARN, each with a qualifier (`NAME:ALIAS`): the
            # name's forms count as the ARN's (issue 82, defect 17).
            if target == ENQUEUE or target.startswith(ENQUEUE + ":"):
                target = function_arn + target[len(ENQUEUE):]
            if target == function_arn or target.startswith(function_arn + ":"):
                grants.append((logical, target, resolve(props.get("Principal"))))
            continue
        for document in policy_documents(resolve(props)):
            statements = document.get("Statement", [])
            for statement in [statements] if isinstance(statements, dict) else statements:
                if statement.get("Effect") != "Allow":
                    continue
                # NotAction and NotResource allow what they do not name: counted as reaching it.
                actions = listed(statement.get("Action", [])) if "NotAction" not in statement else ["*"]
                if not any(fnmatch.fnmatchcase("lambda:invokefunction", str(a).lower()) for a in actions):
                    continue
                targets = listed(statement.get("Resource", [])) if "NotResource" not in statement else ["*"]
                # A pattern reaches the function when it matches the function, any qualifier
                # (`:ALIAS`, none of its aliases), or one of its aliases' ARNs: `…:o*` reaches
                # `operate` (issue 82, defect 17).
                reached = (function_arn, function_arn + ":ALIAS", *(f"{function_arn}:{a}" for a in aliases.values()))
                for target in map(str, targets):
                    if any(fnmatch.fnmatchcase(arn, target) for arn in reached):
                        grants.append((logical, target, logical))
    return set(aliases.values()), grants


def listed(value):
    return [value] if isinstance(value, (str, dict)) else list(value)


def policy_documents(obj):
    """Every policy document (a map with `Statement`) anywhere in a resource's properties:
    IAM roles, policies, users and groups alike, and SAM's inline `Policies`."""
    if isinstance(obj, dict):
        if "Statement" in obj:
            yield obj
            return
        for v in obj.values():
            yield from policy_documents(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from policy_documents(v)


def grant_problems(queues, adopted=(), values=None, template=None):
    """Each grant on the enqueue function that names anything but one of its aliases' ARNs (the
    unqualified function, `:*`, a version): one sentence each, [] when every grant is an alias's."""
    aliases, grants = enqueue_grants(queues, adopted, values, template)
    function_arn = f"arn:aws:lambda:{PARTITIONS['aws']}:{ACCOUNT}:function:{ENQUEUE}"
    allowed = {f"{function_arn}:{name}" for name in aliases}
    return [f"{where} grants lambda:InvokeFunction on {target.replace(function_arn, 'the enqueue function')}, "
            "not one of its aliases (docs/security.md): a grant of anything else carries more than its class"
            for where, target, _ in grants if target not in allowed]


def policy_chars(policies):
    """What IAM counts of a role's inline policies: each document without white space. The
    policy names are counted too, which keeps the estimate on the safe side."""
    return sum(len(name) + len(json.dumps(doc, separators=(",", ":"))) for name, doc in policies)


def role_chars(queues, adopted=(), prefix="sqs-waiter-", partition="aws", region=None, kms_keys=(),
               template=None, table_key="", scope="prefix", stack=LONGEST_STACK):
    """{role: inline policy characters} for this deployment."""
    policies = role_policies(queues, adopted, prefix, partition, region, kms_keys, template, table_key, scope, stack)
    return {role: policy_chars(p) for role, p in policies.items()}


def problems(queues, adopted=(), prefix="sqs-waiter-", partition=None, region=None, kms_keys=(), table_key="",
             scope="prefix", stack=LONGEST_STACK, values=None):
    """Why a SAM deploy of these lists would fail at IAM, Lambda or DynamoDB, one sentence each
    ([] when it fits). With no region, each partition is checked at its longest region name."""
    out = []
    count = len(queues) + len(adopted)
    if count > MAX_QUEUES:
        out.append(f"{count} queues: a stack serves at most {MAX_QUEUES} (the count tested at 80-character names "
                   "in SAM and CDK); split them over several stacks")
        return out
    for table in table_names(list(queues) + list(adopted), prefix, scope, stack):
        if not TABLE_NAME_MIN <= len(table) <= TABLE_NAME_MAX:
            out.append(f"table name '{table}' ({len(table)} characters) is outside DynamoDB's "
                       f"{TABLE_NAME_MIN} to {TABLE_NAME_MAX}: change "
                       f"{'the stack name' if scope == 'stack' else 'TablePrefix'} or the queue name")
    if out:
        return out
    partitions = [partition_of(region)] if region else [partition] if partition else list(PARTITIONS)
    template = load_template()
    resources = resource_count(queues, adopted, {**(values or {}), "TableScope": scope}, template)
    if resources > STACK_RESOURCES:
        out.append(f"{count} queues make {resources} resources, over CloudFormation's {STACK_RESOURCES} per stack "
                   "(each queue brings 2 aliases of its own with QueueAliases=true, the default, and each created "
                   "table 8 autoscaling resources with MaxReadCapacity and MaxWriteCapacity): split them over several "
                   "stacks, set QueueAliases=false (the class aliases only; docs/security.md), or leave autoscaling "
                   "off")
    env = environment_bytes(queues, adopted, prefix, template, scope, stack)
    if env > LAMBDA_ENVIRONMENT_BYTES:
        out.append(f"{count} queues make the functions' environment {env} bytes, over Lambda's "
                   f"{LAMBDA_ENVIRONMENT_BYTES} (WAITER_QUEUES holds the list): deploy them with the CDK construct, "
                   "which moves a long list into a layer, or split them over several SAM stacks")
    for p in partitions:
        chars = role_chars(queues, adopted, prefix, p, region, kms_keys, template, table_key, scope, stack)
        over = {role: c for role, c in chars.items() if c > ROLE_INLINE_POLICY_CHARS}
        if over:
            where = f"{p} ({region})" if region else f"{p} (region not given: checked at {PARTITIONS[p]})"
            needs = " and ".join(f"{role} {c}" for role, c in over.items())
            out.append(
                f"{len(queues) + len(adopted)} queues do not fit one SAM stack in {where}: {needs} characters of "
                f"inline policy, over IAM's {ROLE_INLINE_POLICY_CHARS} per role. Deploy them with the CDK construct "
                "(infra/, no such limit), or split them over several SAM stacks, each with its own TablePrefix"
                + ("; a new stack with TableScope=stack grants all its queues in three policies" if scope != "stack" else "")
                + " (docs/deploy.md \"IAM\")")
    return out


def scope_of(deployment):
    """(TableScope, stack name) of a deployment dict of update_problems, the defaults if unset."""
    return deployment.get("scope", "prefix"), deployment.get("stack", LONGEST_STACK)


def peak_chars(new, old):
    """{role: characters} while an update runs. CloudFormation creates the policies it adds and
    updates the ones it keeps before it deletes the ones it removes (its cleanup phase), so a
    role holds both sets at once; a policy kept under its name counts at its larger version."""
    out = {}
    for role in ROLES:
        sizes = {}
        for name, doc in list(old.get(role, [])) + list(new.get(role, [])):
            sizes[name] = max(sizes.get(name, 0), policy_chars([(name, doc)]))
        out[role] = sum(sizes.values())
    return out


def update_problems(deploy, current, current_template, partition=None, region=None):
    """Why an update from the stack's `current` deployment to `deploy` would fail at IAM midway
    although its end state fits ([] when it does not). Each is {"queues", "adopted", "prefix",
    "kms_keys"} and optionally "table_key"; `current_template` is the stack's processed template (whatever version of
    template.yaml, or an older one, it was deployed from)."""
    out = []
    partitions = [partition_of(region)] if region else [partition] if partition else list(PARTITIONS)
    template = load_template()
    for p in partitions:
        new = role_policies(deploy["queues"], deploy["adopted"], deploy["prefix"], p, region, deploy["kms_keys"],
                            template, deploy.get("table_key", ""), *scope_of(deploy))
        old = role_policies(current["queues"], current["adopted"], current["prefix"], p, region,
                            current["kms_keys"], current_template, current.get("table_key", ""), *scope_of(current))
        over = {role: c for role, c in peak_chars(new, old).items() if c > ROLE_INLINE_POLICY_CHARS}
        if not over:
            continue
        step = first_step(deploy, current, old, p, region, template)
        needs = " and ".join(f"{role} {c}" for role, c in over.items())
        advice = (f"Deploy in two steps: first QUEUES={','.join(step['queues'])} ADOPT={','.join(step['adopted'])} "
                  "(the queues that stay, and what fits beside the current ones), then these lists"
                  if step else "Deploy fewer new queues at a time")
        out.append(
            f"the update passes IAM's {ROLE_INLINE_POLICY_CHARS} characters per role midway in {p} ({needs}): "
            f"CloudFormation holds the stack's current policies and the new ones at once. {advice}. Tables are "
            "kept (DeletionPolicy Retain), and the jobs of a queue that is out for one deploy wait in its table "
            "(docs/deploy.md \"IAM\")")
    return out


def first_step(deploy, current, old, partition, region, template):
    """Lists for a first deploy that fits midway from `current` and leaves a second step that
    fits too: the queues that stay, plus the new ones, in order, while the update to them fits
    beside the current policies (a subset of the new lists, so the second step's midway is the
    new end state). None when not even one queue fits."""
    step = {"queues": [q for q in current["queues"] if q in deploy["queues"]],
            "adopted": [q for q in current["adopted"] if q in deploy["adopted"]],
            "prefix": deploy["prefix"], "kms_keys": deploy["kms_keys"], "table_key": deploy.get("table_key", ""),
            "scope": scope_of(deploy)[0], "stack": scope_of(deploy)[1]}

    def fits(lists):
        new = role_policies(lists["queues"], lists["adopted"], lists["prefix"], partition, region,
                            lists["kms_keys"], template, lists["table_key"], *scope_of(lists))
        return all(c <= ROLE_INLINE_POLICY_CHARS for c in peak_chars(new, old).values())

    for key in ("queues", "adopted"):
        for q in deploy[key]:
            if q not in step[key]:
                trial = {**step, key: step[key] + [q]}
                if fits(trial):
                    step = trial
    return step if (step["queues"] or step["adopted"]) and fits(step) else None


def max_queues(name_length, partition, prefix="sqs-waiter-", region=None, scope="prefix", stack=LONGEST_STACK):
    """How many queues of `name_length` characters one SAM stack holds in `partition`: what its
    roles' inline policies and the functions' environment hold, and at most MAX_QUEUES."""
    template = load_template()
    lo, hi = 0, 1
    fits = lambda n: n <= MAX_QUEUES and not problems(  # noqa: E731
        [f"{i:0{name_length}d}" for i in range(n)], (), prefix, partition, region, scope=scope, stack=stack)
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


if __name__ == "__main__":
    for scope in ("prefix", "stack"):
        print(f"queues of 20, 40 and 80 characters one SAM stack holds (TableScope={scope}, TablePrefix sqs-waiter-, "
              f"a {STACK_NAME_MAX}-character stack name):")
        for p in PARTITIONS:
            print(f"  {p:<11} ({PARTITIONS[p]}): "
                  + ", ".join(f"{n}: {max_queues(n, p, scope=scope)}" for n in (20, 40, 80)))
