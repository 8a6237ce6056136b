"""schemathesis hooks for the serve schema test (Tests/ServiceTests/ServeSchemaTests.swift).

A valid POST starts a real job, and the job writes where its paths say: a recording creates
its `out` folder (and `mix` file), a playback and a `key.file` read theirs. The service keeps
them below its --output-root and --media-root (the test's folder), and generated paths are
anything, so every path the service would take is replaced before the request is sent: folders
and mix files go under the test's sandbox folder, files to play and key files are the test's
own. A path the service refuses anyway (empty, with a NUL byte, too long) is sent as
generated, so refusals are still exercised. The rest of the body is left alone: a generated
Janus URL is refused (400) unless it is the service's own Janus, and generated rooms do not exist on the
test's Janus, so jobs fail at their join and stay listed as failed.
"""
import hashlib
import json
import os

import schemathesis

SANDBOX = os.environ["SFUBOT_SCHEMA_SANDBOX"]
# A playable file and a valid key file, so that playbacks and `key.file` keys also start jobs.
MEDIA = os.environ["SFUBOT_SCHEMA_MEDIA"]
KEY_FILE = os.environ["SFUBOT_SCHEMA_KEY_FILE"]
# The one destination the service lets relays send to (--relay-allow).
RELAY_TO = os.environ["SFUBOT_SCHEMA_RELAY_TO"]


def _accepted_path(value):
    return isinstance(value, str) and value != "" and "\0" not in value and len(value.encode("utf-8", "surrogatepass")) <= 1024


def _sandboxed(value):
    # Same generated path, same sandbox path: two recordings into one folder still meet (409).
    return os.path.join(SANDBOX, hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16])


@schemathesis.hook
def before_call(context, case, kwargs):
    body = case.body
    if not isinstance(body, dict):
        return
    for field in ("out", "mix"):
        if _accepted_path(body.get(field)):
            body[field] = _sandboxed(body[field])
    if _accepted_path(body.get("file")):
        body["file"] = MEDIA
    key = body.get("key")
    if isinstance(key, dict) and _accepted_path(key.get("file")):
        key["file"] = KEY_FILE
    # Half the relays to the allowed destination (they start), half as generated (400, 403).
    to = body.get("to")
    if isinstance(to, str) and hashlib.sha256(to.encode("utf-8", "surrogatepass")).digest()[0] % 2 == 0:
        body["to"] = RELAY_TO


# Ids of the jobs the service created, by collection: a generated id never names one, so half of
# the `POST …/{id}/keys` calls go to a real job instead (ended ones, as generated rooms do not
# exist: 409; refused bodies: 400), so those answers are checked against the document too.
JOBS = {"/v1/recordings": [], "/v1/playbacks": [], "/v1/relays": []}
_calls = [0]


@schemathesis.hook
def after_call(context, case, response):
    if case.method.upper() == "POST" and case.path in JOBS and response.status_code == 201:
        try:
            JOBS[case.path].append(json.loads(response.content)["id"])
        except (ValueError, KeyError, TypeError):
            pass


@schemathesis.hook("before_call")
def keys_to_real_jobs(context, case, kwargs):
    collection = case.path.rsplit("/{id}/", 1)[0]
    if not case.path.endswith("/{id}/keys") or not JOBS.get(collection):
        return
    _calls[0] += 1
    if _calls[0] % 2 == 0:
        case.path_parameters["id"] = JOBS[collection][_calls[0] % len(JOBS[collection])]
