"""botocore's S3 SigV4 signer on requests given as JSON on stdin; prints the headers it adds.

The independent check of ObjectStore's signer (Tests/ObjectStoreTests/SigV4Tests.swift): each
request has method, host, path (the object key as it is: botocore's way of encoding it is used
here, not ours), params (raw name/value pairs), headers, body (hex), timestamp (YYYYMMDDTHHMMSSZ),
access_key, secret_key, token (may be absent), region. The clock is botocore's own function, fixed.
"""
import datetime
import json
import sys
from urllib.parse import quote

import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

out = []
for r in json.load(sys.stdin):
    fixed = datetime.datetime.strptime(r["timestamp"], "%Y%m%dT%H%M%SZ")
    botocore.auth.get_current_datetime = lambda fixed=fixed: fixed
    auth = S3SigV4Auth(Credentials(r["access_key"], r["secret_key"], r.get("token")), "s3", r["region"])
    url = "http://" + r["host"] + quote(r["path"], safe="/~")
    request = AWSRequest(method=r["method"], url=url, headers=dict(r["headers"]),
                         params=[tuple(p) for p in r["params"]], data=bytes.fromhex(r["body"]))
    auth.add_auth(request)
    out.append({k.lower(): v for k, v in request.headers.items()
                if k.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token")})
json.dump(out, sys.stdout)
