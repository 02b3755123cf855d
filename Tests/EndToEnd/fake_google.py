#!/usr/bin/env python3
"""A local fake of Google's API Keys service (apikeys.googleapis.com v2), the OAuth token
endpoint and the metadata server, in one process with the fake Gemini server, so that a key the
API Keys fake makes is the key the Gemini fake accepts (they share the key registry below).

It follows ../shared/reference/google-keys.md §1 (the wire shapes, the traps and the timing):
- a create answers 200 with an operation that is not done; polls go done:false, then done:true
  (`op_polls`); a reused key id (also a deleted one, for 30 days) ends done with error code 6
  "A key with this id already exists." inside a 200;
- the key string is only in the finished create operation's response and in getKeyString;
  get, list and the delete/undelete results never carry it;
- keys are named by project NUMBER; a project may be named by id or number in a request;
- delete is soft: deleteTime is set, get still answers, list hides it unless showDeleted=true,
  undelete restores it; a delete with a stale etag is refused (409 ABORTED);
- a new key is refused by Gemini with 400 API_KEY_INVALID for `propagation` seconds (of the
  client's waiting clock: `speedup` times real time, as a debug gemvault runs it under
  GEMVAULT_TEST_WAIT_SPEEDUP), and a deleted key still works for `delete_lag` seconds;
- 401 without a token or with an unknown one; 403 ACCESS_TOKEN_SCOPE_INSUFFICIENT for a token
  without the cloud-platform scope; 403 PERMISSION_DENIED for an identity without the role;
  403 SERVICE_DISABLED when the API Keys API is off, and the quota-project variant for a user's
  token sent without x-goog-user-project;
- the token endpoint verifies a service account's JWT (RS256 with the account's public key,
  aud = this endpoint's URL, iss = a known account, scope, iat/exp within an hour) with the
  `cryptography` package, and a user's refresh-token grant;
- the metadata server answers only with `Metadata-Flavor: Google`.

Tests steer it with POST /_control (JSON) and read it with GET /_state (key strings included:
the tests are the only readers). `fail` makes one API Keys method answer with an error once or
always: {"create": "permission"} or {"delete": "server:once"}; see FAILURES. `omit_key_string`
leaves the key string out of the finished create (the client must call getKeyString);
`reuse_id` answers every create as a reused id; `bound_keys_forbidden` fails a bound create as
the organisation policy does (inside the operation; "http" refuses the create call itself with
400 FAILED_PRECONDITION); `unrestricted_result` drops the restrictions from a new key. `delay`
holds a method's answer for some seconds ({"delete": 3}); `lose` carries a method out and drops
the connection without an answer ({"create": "once"}); `purge` makes keys gone for good (404,
as 30 days after a delete). `key_string_tail` is appended to every new key string (a second line a
hostile or broken answer could carry). `trickle` names the endpoints ("token", "metadata", "apikeys")
whose answers go out one byte every 0.2 s after proper headers, padded so that this takes ten
minutes: a client without a total deadline is held. `clock_offset` sets Google's clock that many
seconds from real time: the Date header and every time the fake reports. Gemini calls follow the key's API restrictions: a method they do not
allow is refused with 403 API_KEY_SERVICE_BLOCKED.
"""
import argparse
import base64
import email.utils
import json
import os
import secrets
import sys
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_federation  # noqa: E402
import fake_gemini  # noqa: E402

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
LOCK = threading.RLock()
PROJECT_NUMBER = "123456867718"
PROJECT_ID = "gen-lang-client-0123456789"

STATE = {
    "project": {"number": PROJECT_NUMBER, "id": PROJECT_ID, "apikeys_enabled": True},
    "keys": {},          # name -> key resource plus keyString, created_at, deleted_at
    "operations": {},    # name -> {"polls": n, "result": {...}}
    "tokens": {},        # access token -> {"scope", "user", "identity"}
    "accounts": {},      # service account email -> public key PEM
    "users": {},         # refresh token -> {"client_id", "client_secret"}
    "denied": [],        # identities without the API Keys Admin role
    "config": {"op_polls": 2, "propagation": 0.0, "speedup": 1, "delete_lag": 0.0, "fail": {}, "metadata_token_scope": SCOPE,
               "unrestricted_result": False, "bound_keys_forbidden": False, "omit_key_string": False, "reuse_id": False,
               "key_string_tail": "", "trickle": [], "clock_offset": 0},
    "calls": [],         # API Keys calls: [method, path without query, x-goog-user-project]
    "secrets": {},       # Secret Manager: "projects/NUMBER/secrets/S" -> {"versions": [{"data": base64, "state"}]}
    "sm_denied": [],     # identities without secretmanager.versions.access
    "sm_calls": [],      # Secret Manager calls: [method, path]
    "providers": {},     # STS: audience -> {"allowed_audiences": [...], "condition": {claim: value}}
    "grants": {},        # IAM Credentials: service account -> members allowed to mint its tokens
    "sts_calls": [],     # {"audience", "scope", "options"}
    "iam_calls": [],     # {"target", "scope", "lifetime", "delegates"}
}


def crc32c(data):
    """CRC-32C (Castagnoli), as Secret Manager's dataCrc32c."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def now():
    """Google's clock: real time moved on by `clock_offset` seconds (the Date header and every
    time the fake reports or compares, so a test can set Google's clock apart from a machine's)."""
    return time.time() + STATE["config"]["clock_offset"]


def rfc3339(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%06dZ" % int((seconds % 1) * 1e6)


def new_key_string():
    return "AQ." + secrets.token_urlsafe(38)[:50]


def new_etag():
    return 'W/"%s"' % base64.b64encode(os.urandom(16)).decode()


def public_key(key):
    """A key resource as get and list answer it: no keyString, no bookkeeping."""
    return {k: v for k, v in key.items() if k not in ("keyString", "created_at", "deleted_at", "purged")}


def error_body(code, status, message, reason=None, metadata=None, extra=None):
    details = []
    if reason:
        details.append({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com",
                        "metadata": metadata or {}})
    if extra:
        details = extra + details
    return {"error": {"code": code, "message": message, "status": status, "details": details}}


def service_disabled(project):
    url = "https://console.developers.google.com/apis/api/apikeys.googleapis.com/overview?project=%s" % project
    return 403, error_body(403, "PERMISSION_DENIED",
                           "API Keys API has not been used in project %s before or it is disabled. Enable it by visiting %s then retry. "
                           "If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry." % (project, url),
                           "SERVICE_DISABLED", {"consumer": "projects/%s" % project, "service": "apikeys.googleapis.com"},
                           [{"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Google developers console API activation", "url": url}]}])


QUOTA_PROJECT_MISSING = (403, error_body(
    403, "PERMISSION_DENIED",
    "Your application is authenticating by using local Application Default Credentials. The apikeys.googleapis.com API requires a quota project, "
    "which is not set by default. To learn how to set your quota project, see https://cloud.google.com/docs/authentication/adc-troubleshooting/user-creds .",
    "SERVICE_DISABLED", {"consumer": "projects/764086051850", "service": "apikeys.googleapis.com"}))


def permission_denied(permission):
    return 403, error_body(403, "PERMISSION_DENIED", "Permission '%s' denied on resource //apikeys.googleapis.com/projects/%s (or it may not exist)."
                           % (permission, PROJECT_NUMBER), "IAM_PERMISSION_DENIED", {"permission": permission})


FAILURES = {
    "permission": lambda method: permission_denied("apikeys.keys." + method),
    "service_disabled": lambda method: service_disabled(PROJECT_ID),
    "server": lambda method: (500, error_body(500, "INTERNAL", "Internal error encountered.")),
    "unavailable": lambda method: (503, error_body(503, "UNAVAILABLE", "The service is currently unavailable.")),
}


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class GoogleHandler(fake_gemini.Handler):
    token_url = None

    # -- the shared key registry: Gemini accepts what the API Keys fake says ---------------
    def gemini_method(self):
        """The RPC a Gemini request calls, as API restrictions name it."""
        path = urlsplit(self.path).path
        if self.command == "GET":
            return "google.ai.generativelanguage.v1beta.ModelService." + ("ListModels" if path.rstrip("/").endswith("/models") else "GetModel")
        verb = path.rsplit(":", 1)[-1]
        rpc = {"countTokens": "CountTokens", "generateContent": "GenerateContent", "streamGenerateContent": "StreamGenerateContent"}.get(verb, verb)
        return "google.ai.generativelanguage.v1beta.GenerativeService." + rpc

    def blocked(self, restrictions):
        """Google's answer for a call the key's API restrictions do not allow, else None."""
        targets = (restrictions or {}).get("apiTargets")
        if not targets:
            return None
        method = self.gemini_method()
        allowed = False
        for target in targets:
            if target.get("service") != "generativelanguage.googleapis.com":
                continue
            methods = target.get("methods") or []
            short = method.rsplit(".", 1)[-1]
            names = (method, short, "generativelanguage.googleapis.com." + short)
            allowed |= not methods or any(n == m or (m.endswith("*") and n.startswith(m[:-1])) for m in methods for n in names)
        if allowed:
            return None
        return error_body(403, "PERMISSION_DENIED", "Requests to this API generativelanguage.googleapis.com method %s are blocked." % method,
                          "API_KEY_SERVICE_BLOCKED", {"service": "generativelanguage.googleapis.com", "methodName": method,
                                                      "consumer": "projects/" + PROJECT_NUMBER})

    def authorised(self):
        bearer = self.headers.get("Authorization", "")
        if bearer.startswith("Bearer ") and not self.headers.get("x-goog-api-key"):
            return self.bearer_authorised(bearer[len("Bearer "):])
        key = self.headers.get("x-goog-api-key")
        with LOCK:
            known = [k for k in STATE["keys"].values() if k["keyString"] == key]
            config = STATE["config"]
        if key and known and not self.headers.get("Authorization"):
            entry = known[0]
            refusal = self.blocked(entry.get("restrictions"))
            if refusal:
                self.send_json(403, json.dumps(refusal, indent=2).encode())
                return False
            invalid = fake_gemini.fixture("error-invalid-key.json").replace(b"{KEY_PREFIX}", key[:12].encode())
            if entry["deleted_at"] is not None and now() - entry["deleted_at"] >= config["delete_lag"]:
                self.send_json(400, invalid)
                return False
            if (now() - entry["created_at"]) * config["speedup"] < config["propagation"]:
                self.send_json(400, invalid)
                return False
            return True
        return super().authorised()

    def bearer_authorised(self, token):
        """Gemini with an OAuth token (keyless.md §0): a known, unexpired token with a
        generative-language scope; a user's token only with x-goog-user-project. A request with
        both a key and a token never gets here: the key path refuses it (401)."""
        with LOCK:
            entry = STATE["tokens"].get(token)
            if entry is not None:
                STATE.setdefault("gemini_bearer_calls", []).append({"identity": entry["identity"], "user_project": self.headers.get("x-goog-user-project")})
        if entry is None or entry.get("expires", now() + 1) <= now():
            self.reply(401, error_body(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                                       "ACCESS_TOKEN_EXPIRED" if entry else None, {"service": "generativelanguage.googleapis.com"}))
            return False
        scopes = entry["scope"].split()
        if not any(scope.startswith("https://www.googleapis.com/auth/generative-language") for scope in scopes):
            self.reply(403, error_body(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.", "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                                       {"service": "generativelanguage.googleapis.com", "method": self.gemini_method()}))
            return False
        if entry["user"] and not self.headers.get("x-goog-user-project"):
            self.reply(403, error_body(403, "PERMISSION_DENIED", "Your application is authenticating by using local Application Default Credentials. "
                                       "The generativelanguage.googleapis.com API requires a quota project, which is not set by default.", "SERVICE_DISABLED",
                                       {"service": "generativelanguage.googleapis.com", "consumer": "projects/764086051850"}))
            return False
        return True

    # -- plumbing ---------------------------------------------------------------------------
    def record(self, body):
        # The lookup's key string and every bearer token stay out of the fake's log.
        path = self.path
        if "keyString=" in path:
            self.path = path.split("keyString=")[0] + "keyString=REDACTED"
        super().record(b"" if "/token" in path else body)
        self.path = path

    def date_time_string(self, timestamp=None):
        # The Date header of every answer, on Google's clock.
        return email.utils.formatdate(now() if timestamp is None else timestamp, usegmt=True)

    def reply(self, status, payload):
        self.send_json(status, json.dumps(payload, indent=2).encode())

    def send_json(self, status, payload, content_type="application/json; charset=UTF-8"):
        path = urlsplit(self.path).path
        kind = "token" if path == "/token" else "metadata" if path.startswith("/computeMetadata/") else "apikeys" if path.startswith("/v2/") else None
        with LOCK:
            trickling = kind in STATE["config"]["trickle"]
        if not trickling:
            return super().send_json(status, payload, content_type)
        # JSON allows white space after the value: 3000 bytes at 5 a second hold a client ten minutes.
        payload = payload + b" " * max(0, 3000 - len(payload))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.flush()
        for byte in payload:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.2)
            if fake_gemini.client_gone(self.connection):
                return

    def body_json(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        self.raw_body = raw
        return raw

    def route(self, method):
        raw = self.body_json() if method in ("POST", "PATCH", "DELETE") else b""
        self.record(raw)
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/_control":
            return self.control(json.loads(raw or b"{}"))
        if path == "/_state":
            with LOCK:
                return self.reply(200, {k: v for k, v in STATE.items()})
        if path == "/token" and method == "POST":
            return self.token(parse_qs(raw.decode()))
        if path == "/v1/token" and method == "POST":
            with LOCK:
                return self.reply(*fake_federation.exchange(STATE, parse_qs(raw.decode()), self.issuer(), now()))
        if path.startswith("/v1/projects/-/serviceAccounts/") and path.endswith(":generateAccessToken") and method == "POST":
            return self.generate_access_token(path, raw)
        if path.startswith("/oidc/"):
            return self.oidc(path, query)
        if path.startswith("/computeMetadata/"):
            return self.metadata(path)
        if path.startswith("/v2/"):
            return self.apikeys(method, path, query, raw)
        if path.startswith("/v1/projects/"):
            return self.secretmanager(method, path)
        self.reply(404, error_body(404, "NOT_FOUND", "no such path"))

    def federation(self):
        """STS and IAM Credentials, which share /v1/ with Gemini's paths."""
        path = urlsplit(self.path).path
        return path == "/v1/token" or path.endswith(":generateAccessToken")

    def do_GET(self):
        if self.path.startswith(("/v1beta/", "/v1/", "/v1alpha/")) and not self.path.startswith("/v1/projects/"):
            return fake_gemini.Handler.do_GET(self)
        self.route("GET")

    def do_POST(self):
        if self.path.startswith(("/v1beta/", "/v1/", "/v1alpha/")) and not self.path.startswith("/v1/projects/") and not self.federation():
            return fake_gemini.Handler.do_POST(self)
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def do_PATCH(self):
        self.route("PATCH")

    # -- control ---------------------------------------------------------------------------
    def control(self, command):
        with LOCK:
            if "set" in command:
                STATE["config"].update(command["set"])
            if "project" in command:
                STATE["project"].update(command["project"])
            for account in command.get("accounts", []):
                STATE["accounts"][account["email"]] = account["public_pem"]
            for user in command.get("users", []):
                STATE["users"][user["refresh_token"]] = user
            for token in command.get("tokens", []):
                STATE["tokens"][token["token"]] = token
            STATE["denied"] += command.get("deny", [])
            STATE["sm_denied"] += command.get("sm_deny", [])
            # [identity, permission] pairs: one permission taken away (the rotator without versions.add).
            STATE.setdefault("sm_denied_permissions", []).extend(command.get("sm_deny_permission", []))
            for secret in command.get("secrets", []):
                # {"id": S, "versions": [value, ...], "states": {"2": "DISABLED"}, "raw": [base64, ...]}
                name = "projects/%s/secrets/%s" % (PROJECT_NUMBER, secret["id"])
                versions = STATE["secrets"].setdefault(name, {"versions": []})["versions"]
                for value in secret.get("versions", []):
                    versions.append({"data": base64.b64encode(value.encode()).decode(), "state": "ENABLED"})
                for raw in secret.get("raw", []):
                    versions.append({"data": raw, "state": "ENABLED"})
                if "rotation" in secret:
                    STATE["secrets"][name]["rotation"] = secret["rotation"]
                for number, state in secret.get("states", {}).items():
                    versions[int(number) - 1]["state"] = state
                for number, age in secret.get("ages", {}).items():
                    # The clock the tests move: a version made `age` seconds ago.
                    versions[int(number) - 1]["created"] = now() - age
                if "annotations" in secret:
                    STATE["secrets"][name]["annotations"] = secret["annotations"]
                    STATE["secrets"][name]["etag"] = '"%s"' % secrets.token_hex(7)
                if "keep" in secret:
                    # Versions past the first `keep` gone (as if never made): `latest` goes back.
                    del versions[secret["keep"]:]
            STATE["providers"].update(command.get("providers", {}))
            for account, members in command.get("grants", {}).items():
                STATE["grants"].setdefault(account, []).extend(members)
            if "oidc" in command:
                claims = dict({"iss": self.issuer(), "iat": int(now()), "exp": int(now()) + 600}, **command["oidc"])
                return self.reply(200, {"ok": True, "oidc": fake_federation.sign(claims)})
            for name in command.get("purge", []):
                STATE["keys"][name]["purged"] = True
            for key in command.get("keys", []):
                name = "projects/%s/locations/global/keys/%s" % (PROJECT_NUMBER, key["id"])
                created = now() - key.get("age", 3600)
                STATE["keys"][name] = {
                    "name": name, "uid": str(uuid.uuid4()), "displayName": key.get("displayName", "Gemini API Key"),
                    "createTime": rfc3339(created), "updateTime": rfc3339(created), "etag": new_etag(),
                    "restrictions": key.get("restrictions", {"apiTargets": [{"service": "generativelanguage.googleapis.com"}]}),
                    "serviceAccountEmail": key.get("serviceAccountEmail"), "keyString": key["keyString"],
                    "created_at": created, "deleted_at": None}
                if "annotations" in key:
                    STATE["keys"][name]["annotations"] = key["annotations"]
                if not key.get("restrictions", True):
                    del STATE["keys"][name]["restrictions"]
            return self.reply(200, {"ok": True})

    # -- OAuth -----------------------------------------------------------------------------
    def token(self, form):
        def refuse(description):
            self.reply(400, {"error": "invalid_grant", "error_description": description})
        grant = form.get("grant_type", [""])[0]
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            assertion = form.get("assertion", [""])[0]
            try:
                header_b64, claims_b64, signature_b64 = assertion.split(".")
                header = json.loads(b64url_decode(header_b64))
                claims = json.loads(b64url_decode(claims_b64))
            except ValueError:
                return refuse("Invalid JWT: malformed")
            if header.get("alg") != "RS256":
                return refuse("Invalid JWT: alg must be RS256")
            with LOCK:
                pem = STATE["accounts"].get(claims.get("iss"))
            if pem is None:
                return refuse("Invalid JWT: iss is not a known service account")
            try:
                serialization.load_pem_public_key(pem.encode()).verify(
                    b64url_decode(signature_b64), (header_b64 + "." + claims_b64).encode(), padding.PKCS1v15(), hashes.SHA256())
            except (InvalidSignature, ValueError):
                return refuse("Invalid JWT Signature.")
            if claims.get("aud") != self.token_url:
                return refuse("Invalid JWT: aud must be %s" % self.token_url)
            if SCOPE not in str(claims.get("scope", "")).split():
                return refuse("Invalid JWT: the scope lacks cloud-platform")
            iat, exp = claims.get("iat", 0), claims.get("exp", 0)
            if not (iat - 300 <= now() <= exp) or exp - iat > 3600:
                return refuse("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
            return self.issue(claims["iss"], user=False, scope=claims["scope"])
        if grant == "refresh_token":
            with LOCK:
                user = STATE["users"].get(form.get("refresh_token", [""])[0])
            if not user or user["client_id"] != form.get("client_id", [""])[0] or user["client_secret"] != form.get("client_secret", [""])[0]:
                return refuse("Token has been expired or revoked.")
            # A refresh grants the scopes consented at login (keyless.md §2.2).
            return self.issue(user.get("email", "user@example.com"), user=True, scope=user.get("scope", SCOPE))
        return self.reply(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + grant})

    def issue(self, identity, user, scope=SCOPE):
        token = "ya29." + secrets.token_urlsafe(40)
        with LOCK:
            lifetime = STATE["config"].get("token_lifetime") or 3599
            STATE["tokens"][token] = {"token": token, "scope": scope, "user": user, "identity": identity, "expires": now() + lifetime}
        self.reply(200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer", "scope": scope})

    # -- Workload Identity Federation (fake_federation.py) ---------------------------------
    def issuer(self):
        return self.token_url[:-len("/token")] + "/oidc"

    def oidc(self, path, query):
        if path == "/oidc/.well-known/openid-configuration":
            return self.reply(200, {"issuer": self.issuer(), "jwks_uri": self.issuer() + "/jwks", "id_token_signing_alg_values_supported": ["RS256"]})
        if path == "/oidc/jwks":
            return self.reply(200, fake_federation.jwks())
        if path == "/oidc/gha":
            with LOCK:
                return self.reply(*fake_federation.github_token(STATE, self.headers.get("Authorization", ""), query.get("audience", [""])[0],
                                                                self.issuer(), now()))
        return self.reply(404, {"error": "not found"})

    def generate_access_token(self, path, raw):
        email = unquote(path[len("/v1/projects/-/serviceAccounts/"):-len(":generateAccessToken")])
        header = self.headers.get("Authorization", "")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.reply(400, error_body(400, "INVALID_ARGUMENT", "Invalid JSON payload received."))
        with LOCK:
            caller = STATE["tokens"].get(header[len("Bearer "):]) if header.startswith("Bearer ") else None
            return self.reply(*fake_federation.generate_access_token(STATE, caller, email, body, now(), rfc3339))

    def metadata(self, path):
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.reply(403, {"error": "Missing required header: Metadata-Flavor"})
        if path == "/computeMetadata/v1/":
            return self.send_json(200, b"instance/\nproject/\n", "application/text")
        if path == "/computeMetadata/v1/instance/service-accounts/default/token":
            with LOCK:
                scope = STATE["config"]["metadata_token_scope"]
            return self.issue("vm@%s.iam.gserviceaccount.com" % PROJECT_ID, user=False, scope=scope)
        return self.reply(404, {"error": "not found"})

    # -- Secret Manager --------------------------------------------------------------------
    def secretmanager(self, method, path):
        """versions.access, with Google's answers for a missing secret or version, a disabled or
        destroyed one, a missing scope and a missing permission (IAM before existence); and what
        rotation uses: secrets.get and patch (annotations, with etags), addVersion, versions.list,
        enable and disable."""
        with LOCK:
            STATE["sm_calls"].append([method, path])
        segments = path[len("/v1/"):].split("/")
        if len(segments) >= 4 and segments[0] == "projects" and segments[2] == "secrets":
            caller = self.secret_caller(segments[1], segments[3])
            if caller is None:
                return None
            if not (method == "GET" and len(segments) == 6 and segments[5].endswith(":access")):
                return self.secret_method(method, segments, caller)
        if method != "GET" or len(segments) != 6 or segments[2] != "secrets" or segments[4] != "versions" or not segments[5].endswith(":access"):
            return self.reply(404, error_body(404, "NOT_FOUND", "no such Secret Manager method in this fake"))
        project, secret, version = segments[1], segments[3], segments[5][:-len(":access")]
        header = self.headers.get("Authorization", "")
        with LOCK:
            token = STATE["tokens"].get(header[len("Bearer "):]) if header.startswith("Bearer ") else None
            denied = token and token["identity"] in STATE["sm_denied"]
        if token is None:
            return self.reply(401, error_body(401, "UNAUTHENTICATED", "Request is missing required authentication credential.", "CREDENTIALS_MISSING"))
        if SCOPE not in token["scope"].split():
            return self.reply(403, error_body(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"))
        if self.injected("access"):
            return None
        with LOCK:
            # `fail_access_versions` [N, ...]: reading those versions by number answers 503, always.
            unavailable = version in [str(n) for n in STATE["config"].get("fail_access_versions", [])]
        if unavailable:
            return self.reply(503, error_body(503, "UNAVAILABLE", "The service is currently unavailable."))
        if denied:
            resource = "projects/%s/secrets/%s/versions/%s" % (project, secret, version)
            return self.reply(403, error_body(403, "PERMISSION_DENIED", "Permission 'secretmanager.versions.access' denied for resource '%s' (or it may not exist)."
                                              % resource, "IAM_PERMISSION_DENIED", {"permission": "secretmanager.versions.access", "resource": resource}))
        name = "projects/%s/secrets/%s" % (PROJECT_NUMBER, secret)
        with LOCK:
            entry = STATE["secrets"].get(name) if project in (PROJECT_ID, PROJECT_NUMBER) else None
            versions = list(entry["versions"]) if entry else []
            bad_crc = STATE["config"].get("bad_crc", False)
        if not versions:
            return self.reply(404, error_body(404, "NOT_FOUND", "Secret [%s] not found or has no versions." % name))
        number = len(versions) if version == "latest" else int(version) if version.isdigit() else 0
        if not 1 <= number <= len(versions):
            return self.reply(404, error_body(404, "NOT_FOUND", "Secret Version [%s/versions/%s] not found." % (name, version)))
        found = versions[number - 1]
        if found["state"] != "ENABLED":
            return self.reply(400, error_body(400, "FAILED_PRECONDITION", "Secret Version [%s/versions/%d] is in %s state." % (name, number, found["state"])))
        data = found["data"]
        with LOCK:
            # A hostile answer: `forge_latest` {"version": N, "value": V} once for `latest`;
            # `access_project` names another project in every answer.
            forged = STATE["config"].pop("forge_latest", None) if version == "latest" else None
            named = "projects/%s/secrets/%s" % (STATE["config"].get("access_project", PROJECT_NUMBER), secret)
        if forged:
            number, data = forged["version"], base64.b64encode(forged["value"].encode()).decode()
        crc = crc32c(base64.b64decode(data)) ^ (1 if bad_crc else 0)
        return self.reply(200, {"name": "%s/versions/%d" % (named, number), "payload": {"data": data, "dataCrc32c": str(crc)}})

    def secret_caller(self, project, secret):
        """The token's identity for a Secret Manager call other than access, or None once an
        error was answered (401, a missing scope)."""
        header = self.headers.get("Authorization", "")
        with LOCK:
            token = STATE["tokens"].get(header[len("Bearer "):]) if header.startswith("Bearer ") else None
        if token is None:
            self.reply(401, error_body(401, "UNAUTHENTICATED", "Request is missing required authentication credential.", "CREDENTIALS_MISSING"))
            return None
        if SCOPE not in token["scope"].split():
            self.reply(403, error_body(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"))
            return None
        return token

    def secret_method(self, method, segments, token):
        """secrets.get / patch, addVersion, versions.list / enable / disable."""
        secret_id = segments[3].split(":")[0].split("?")[0]
        name = "projects/%s/secrets/%s" % (PROJECT_NUMBER, secret_id)
        raw = getattr(self, "raw_body", b"") or b"{}"
        if method == "GET" and len(segments) == 4:
            kind, permission = "get", "secretmanager.secrets.get"
        elif method == "PATCH" and len(segments) == 4:
            kind, permission = "patch", "secretmanager.secrets.update"
        elif method == "POST" and len(segments) == 4 and segments[3].endswith(":addVersion"):
            kind, permission = "addVersion", "secretmanager.versions.add"
        elif method == "GET" and len(segments) == 5 and segments[4] == "versions":
            kind, permission = "list", "secretmanager.versions.list"
        elif method == "POST" and len(segments) == 6 and segments[4] == "versions" and segments[5].split(":")[-1] in ("enable", "disable"):
            kind, permission = segments[5].split(":")[-1], "secretmanager.versions." + segments[5].split(":")[-1]
        else:
            return self.reply(404, error_body(404, "NOT_FOUND", "no such Secret Manager method in this fake"))
        if self.injected(kind):
            return None
        with LOCK:
            denied = token["identity"] in STATE["sm_denied"] or (token["identity"], permission) in [tuple(d) for d in STATE.get("sm_denied_permissions", [])]
        if denied:
            resource = "/".join(segments[:4]).split(":")[0]
            return self.reply(403, error_body(403, "PERMISSION_DENIED", "Permission '%s' denied for resource '%s' (or it may not exist)." % (permission, resource),
                                              "IAM_PERMISSION_DENIED", {"permission": permission, "resource": resource}))
        with LOCK:
            entry = STATE["secrets"].get(name)
            if entry is None:
                return self.reply(404, error_body(404, "NOT_FOUND", "Secret [%s] not found." % name))
            entry.setdefault("etag", '"%s"' % secrets.token_hex(7))
            entry.setdefault("annotations", {})
            versions = entry["versions"]
            if kind == "get":
                return self.reply(200, self.secret_resource(name, entry))
            if kind == "patch":
                body = json.loads(raw)
                query = parse_qs(urlsplit(self.path).query)
                if query.get("updateMask") != ["annotations"]:
                    return self.reply(400, error_body(400, "INVALID_ARGUMENT", "This fake patches annotations only."))
                if "etag" in body and body["etag"] != entry["etag"]:
                    return self.reply(400, error_body(400, "FAILED_PRECONDITION", "Etag %s does not match the current etag of the Secret [%s]." % (body["etag"], name)))
                entry["annotations"] = body.get("annotations", {})
                entry["etag"] = '"%s"' % secrets.token_hex(7)
                return self.reply(200, self.secret_resource(name, entry))
            if kind == "addVersion":
                payload = json.loads(raw).get("payload", {})
                data = base64.b64decode(payload.get("data", ""))
                if len(data) > 65536:
                    return self.reply(400, error_body(400, "INVALID_ARGUMENT", "Secret Payload cannot be larger than 64KiB."))
                if "dataCrc32c" in payload and int(payload["dataCrc32c"]) != crc32c(data):
                    return self.reply(400, error_body(400, "INVALID_ARGUMENT", "Checksum mismatch."))
                versions.append({"data": payload.get("data", ""), "state": "ENABLED", "created": now()})
                number = len(versions)
                added = {"name": "%s/versions/%d" % (name, number), "createTime": rfc3339(now()), "state": "ENABLED",
                         "etag": '"%s"' % secrets.token_hex(7), "clientSpecifiedPayloadChecksum": "dataCrc32c" in payload}
                delay = STATE["config"].get("delay", {}).get("addVersion", 0)
                lose = STATE["config"].get("lose", {}).pop("addVersion", None)
            else:
                return self.secret_version_method(kind, name, segments, versions)
        # `delay` {"addVersion": s}: the version is added at once and its answer held, outside
        # the lock; `lose` {"addVersion": "once"}: added, and the connection drops unanswered.
        time.sleep(delay)
        if lose:
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        return self.reply(200, added)

    def secret_version_method(self, kind, name, segments, versions):
        """versions.list, enable and disable (the caller holds LOCK)."""
        if kind == "list":
            query = parse_qs(urlsplit(self.path).query)
            listed = [(index + 1, v) for index, v in enumerate(versions)]
            if query.get("filter") == ["state:ENABLED"]:
                listed = [(n, v) for n, v in listed if v["state"] == "ENABLED"]
            listed.reverse()
            # `list_extra` [{"name": ..., "state": ...}]: entries a hostile or confused answer adds.
            entries = STATE["config"].get("list_extra", []) + [
                {"name": "%s/versions/%d" % (name, n), "state": v["state"], "createTime": rfc3339(v.get("created", now()))} for n, v in listed]
            return self.reply(200, {"versions": entries, "totalSize": len(entries)} if entries else {})
        number = int(segments[5].split(":")[0]) if segments[5].split(":")[0].isdigit() else 0
        if not 1 <= number <= len(versions):
            return self.reply(404, error_body(404, "NOT_FOUND", "Secret Version [%s/versions/%s] not found." % (name, segments[5].split(":")[0])))
        if versions[number - 1]["state"] == "DESTROYED":
            return self.reply(400, error_body(400, "FAILED_PRECONDITION", "Secret Version [%s/versions/%d] is in DESTROYED state." % (name, number)))
        versions[number - 1]["state"] = "ENABLED" if kind == "enable" else "DISABLED"
        return self.reply(200, {"name": "%s/versions/%d" % (name, number), "state": versions[number - 1]["state"]})

    @staticmethod
    def secret_resource(name, entry):
        resource = {"name": name, "replication": {"automatic": {}}, "createTime": rfc3339(entry.get("created", now())), "etag": entry["etag"]}
        if entry["annotations"]:
            resource["annotations"] = entry["annotations"]
        if entry.get("rotation"):
            resource["rotation"] = entry["rotation"]
        return resource

    # -- API Keys --------------------------------------------------------------------------
    def caller(self, method):
        """The token's identity, or an answer already sent."""
        header = self.headers.get("Authorization", "")
        with LOCK:
            token = STATE["tokens"].get(header[len("Bearer "):]) if header.startswith("Bearer ") else None
            enabled = STATE["project"]["apikeys_enabled"]
            denied = token and token["identity"] in STATE["denied"]
        if token is None:
            self.reply(401, error_body(401, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected OAuth 2 access token, "
                                       "login cookie or other valid authentication credential.", "CREDENTIALS_MISSING"))
            return None
        if SCOPE not in token["scope"].split():
            self.reply(403, error_body(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.", "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                                       {"method": "google.api.apikeys.v2.ApiKeys." + method, "service": "apikeys.googleapis.com"}))
            return None
        if token["user"]:
            quota = self.headers.get("x-goog-user-project")
            if not quota:
                self.reply(*QUOTA_PROJECT_MISSING)
                return None
            if quota not in (PROJECT_ID, PROJECT_NUMBER):
                self.reply(*service_disabled(quota))
                return None
        if not enabled:
            self.reply(*service_disabled(PROJECT_ID))
            return None
        if denied:
            self.reply(*permission_denied("apikeys.keys." + method.lower()))
            return None
        return token

    def injected(self, method):
        with LOCK:
            fail = STATE["config"]["fail"].get(method)
            if fail and fail.endswith(":once"):
                del STATE["config"]["fail"][method]
                fail = fail[:-len(":once")]
        if fail in FAILURES:
            self.reply(*FAILURES[fail](method))
            return True
        return False

    def operation(self, result, prefix="akmf.p7-%s-" % PROJECT_NUMBER):
        name = "operations/" + prefix + str(uuid.uuid4())
        with LOCK:
            STATE["operations"][name] = {"polls": STATE["config"]["op_polls"], "result": result}
        return {"name": name}

    def find(self, project, key_id):
        if project not in (PROJECT_ID, PROJECT_NUMBER):
            return None
        return STATE["keys"].get("projects/%s/locations/global/keys/%s" % (PROJECT_NUMBER, key_id))

    def apikeys(self, method, path, query, raw):
        with LOCK:
            STATE["calls"].append([method, path, self.headers.get("x-goog-user-project")])
        segments = path[len("/v2/"):].split("/")
        if path == "/v2/keys:lookupKey":
            kind = "lookup"
        elif segments[0] == "operations":
            kind = "operations"
        elif len(segments) == 5 and segments[4] == "keys":
            kind = "create" if method == "POST" else "list"
        elif len(segments) == 6 and segments[5].endswith(":undelete"):
            kind = "undelete"
        elif len(segments) == 7 and segments[6] == "keyString":
            kind = "getKeyString"
        elif len(segments) == 6:
            kind = {"GET": "get", "DELETE": "delete", "PATCH": "update"}.get(method, "?")
        else:
            return self.reply(404, error_body(404, "NOT_FOUND", "Requested entity was not found."))
        if not self.caller(kind) or self.injected(kind):
            return
        with LOCK:
            delay = STATE["config"].get("delay", {}).get(kind, 0)
            lose = STATE["config"].get("lose", {}).get(kind)
            if lose == "once":
                del STATE["config"]["lose"][kind]
        time.sleep(delay)
        if lose:
            # Google did it, and the answer never arrives: the connection drops.
            with LOCK:
                self.apikeys_method(kind, segments, query, raw, answer=False)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        with LOCK:
            return self.apikeys_method(kind, segments, query, raw)

    def apikeys_method(self, kind, segments, query, raw, answer=True):
        if not answer:
            self.reply = lambda status, payload: None
        config = STATE["config"]
        if kind == "operations":
            operation = STATE["operations"].get("/".join(segments))
            if operation is None:
                return self.reply(404, error_body(404, "NOT_FOUND", "Operation not found."))
            if operation["polls"] > 0:
                operation["polls"] -= 1
                return self.reply(200, {"name": "/".join(segments), "metadata": {"@type": "type.googleapis.com/google.protobuf.Empty"}})
            return self.reply(200, dict({"name": "/".join(segments), "done": True}, **operation["result"]))
        if kind == "lookup":
            key_string = query.get("keyString", [""])[0]
            for key in STATE["keys"].values():
                if key["keyString"] == key_string and key["deleted_at"] is None:
                    return self.reply(200, {"parent": "projects/%s/locations/global" % PROJECT_NUMBER, "name": key["name"]})
            return self.reply(404, error_body(404, "NOT_FOUND", "The API key does not exist."))
        project = segments[1]
        if kind == "list":
            show = query.get("showDeleted", ["false"])[0] == "true"
            keys = [public_key(k) for k in STATE["keys"].values() if show or k["deleted_at"] is None]
            return self.reply(200, {"keys": keys})
        if kind == "create":
            key_id = query.get("keyId", [""])[0]
            body = json.loads(raw or b"{}")
            name = "projects/%s/locations/global/keys/%s" % (PROJECT_NUMBER, key_id)
            if project not in (PROJECT_ID, PROJECT_NUMBER):
                return self.reply(*permission_denied("apikeys.keys.create"))
            if config.get("reuse_id") or name in STATE["keys"]:
                result = {"error": {"code": 6, "message": "A key with this id already exists.", "details": [
                    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "FLOW_APIKEY_ALREADY_EXISTS"}]}}
                return self.reply(200, self.operation(result))
            if config["bound_keys_forbidden"] == "http" and body.get("serviceAccountEmail"):
                return self.reply(400, error_body(400, "FAILED_PRECONDITION", "Constraint constraints/iam.managed.disableServiceAccountApiKeyCreation "
                                                  "violated for projects/%s. Creating service account bound API keys is not allowed." % PROJECT_NUMBER))
            if config["bound_keys_forbidden"] and body.get("serviceAccountEmail"):
                result = {"error": {"code": 9, "message": "Constraint iam.managed.disableServiceAccountApiKeyCreation violated."}}
                return self.reply(200, self.operation(result))
            created = now()
            key = {"name": name, "uid": str(uuid.uuid4()), "displayName": body.get("displayName", ""), "createTime": rfc3339(created),
                   "updateTime": rfc3339(created), "etag": new_etag(), "keyString": new_key_string() + config["key_string_tail"],
                   "serviceAccountEmail": body.get("serviceAccountEmail"), "annotations": body.get("annotations", {}),
                   "created_at": created, "deleted_at": None}
            if body.get("restrictions") and not config["unrestricted_result"]:
                key["restrictions"] = body["restrictions"]
            STATE["keys"][name] = key
            response = dict(public_key(key), **{"@type": "type.googleapis.com/google.api.apikeys.v2.Key"})
            if not config.get("omit_key_string"):
                response["keyString"] = key["keyString"]
            result = {"response": response}
            return self.reply(200, self.operation(result))
        key_id = segments[5].split(":")[0]
        key = self.find(project, key_id)
        if key is None:
            return self.reply(*permission_denied("apikeys.keys." + kind.lower()))
        if key.get("purged"):
            # More than 30 days after its delete, a key is gone for good.
            return self.reply(404, error_body(404, "NOT_FOUND", "Requested entity was not found."))
        if kind == "get":
            return self.reply(200, public_key(key))
        if kind == "getKeyString":
            return self.reply(200, {"keyString": key["keyString"]})
        if kind == "delete":
            etag = query.get("etag", [None])[0]
            if etag is not None and etag != key["etag"]:
                return self.reply(409, error_body(409, "ABORTED", "The etag provided does not match the current etag of the key."))
            if key["deleted_at"] is None:
                key["deleted_at"] = now()
                key["deleteTime"] = rfc3339(key["deleted_at"])
                key["etag"] = new_etag()
            return self.reply(200, self.operation({"response": public_key(key)}, prefix="akmf."))
        if kind == "undelete":
            if key["deleted_at"] is None:
                return self.reply(400, error_body(400, "FAILED_PRECONDITION", "The key is not deleted."))
            key["deleted_at"] = None
            key.pop("deleteTime", None)
            key["etag"] = new_etag()
            return self.reply(200, self.operation({"response": public_key(key)}, prefix="akmf."))
        return self.reply(400, error_body(400, "INVALID_ARGUMENT", "unsupported"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    args = parser.parse_args()
    GoogleHandler.log_path = args.log
    GoogleHandler.standard_keys = "reject-401"
    server = ThreadingHTTPServer(("127.0.0.1", 0), GoogleHandler)
    server.daemon_threads = True
    GoogleHandler.token_url = "http://127.0.0.1:%d/token" % server.server_address[1]
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
