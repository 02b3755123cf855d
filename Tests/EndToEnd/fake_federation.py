"""The keyless half of fake_google.py (../shared/reference/keyless.md §3-§6): an OIDC issuer
that signs subject tokens (and answers GitHub's token request), Google's Security Token Service
(`POST /v1/token`, the token-exchange grant) and IAM Credentials `generateAccessToken`.

- The issuer lives at `/oidc`: `/.well-known/openid-configuration` and `/jwks`; tests mint a
  token with `{"oidc": {claims}}` on /_control (the answer carries it), and `/oidc/gha?audience=`
  answers `{"value": jwt}` to the bearer of `github_request_token`, as GitHub's runner endpoint does.
- STS checks what Google documents: RS256 and `kid` of the issuer, `iss`, an `aud` the provider
  allows, `exp` in the future and under 48 h after `iat`, a `sub`; then the provider's attribute
  condition (claims that must match), refused with Google's text. The federated token's scope is
  what was asked; its principal is `principal://…/subject/SUB`.
- generateAccessToken wants a token with cloud-platform or iam scope, a `scope` list, a lifetime
  up to 3600 s, and the caller granted on the target (through each delegate in turn); a refusal is
  Google's 403 "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist)."
- Tokens expire after `token_lifetime` seconds when that config is set (else their own lifetime);
  `iam_allow_calls` refuses generateAccessToken after that many calls (a binding removed mid-chat).
"""
import base64
import json
import secrets
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "fake-issuer-1"
IAM_SCOPE = "https://www.googleapis.com/auth/iam"
CLOUD = "https://www.googleapis.com/auth/cloud-platform"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(claims, kid=KID):
    header = b64url(json.dumps({"alg": "RS256", "kid": kid, "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    signature = KEY.sign((header + "." + body).encode(), padding.PKCS1v15(), hashes.SHA256())
    return header + "." + body + "." + b64url(signature)


def jwks():
    numbers = KEY.public_key().public_numbers()
    def encode(value):
        return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))
    return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": KID, "n": encode(numbers.n), "e": encode(numbers.e)}]}


def verify(token):
    """The claims of a token this issuer signed, else None."""
    try:
        header_b64, body_b64, signature_b64 = token.split(".")
        header = json.loads(b64url_decode(header_b64))
        if header.get("alg") != "RS256" or header.get("kid") != KID:
            return None
        KEY.public_key().verify(b64url_decode(signature_b64), (header_b64 + "." + body_b64).encode(), padding.PKCS1v15(), hashes.SHA256())
        return json.loads(b64url_decode(body_b64))
    except Exception:  # noqa: BLE001 - any malformed token is simply not ours
        return None


def oauth_error(error, description):
    return {"error": error, "error_description": description}


def exchange(state, form, issuer, now):
    """STS: (status, answer) for a token-exchange form."""
    def field(name):
        return form.get(name, [""])[0]
    if field("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
        return 400, oauth_error("invalid_request", "Invalid requested_token_type.")
    provider = state["providers"].get(field("audience"))
    if provider is None:
        return 400, oauth_error("invalid_target", "The target service indicated by the \"audience\" parameters is invalid. "
                                "This might either be because the pool or provider is disabled or deleted or because it doesn't exist.")
    if field("subject_token_type") not in ("urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token"):
        return 400, oauth_error("invalid_request", "Invalid subject_token_type.")
    claims = verify(field("subject_token"))
    if claims is None:
        return 400, oauth_error("invalid_grant", "Invalid value for \"subject_token\". The JWT signature could not be verified.")
    if claims.get("iss") != issuer:
        return 400, oauth_error("invalid_grant", "The issuer in ID Token %s does not match the expected ones: %s." % (claims.get("iss"), issuer))
    allowed = provider.get("allowed_audiences") or ["https://iam.googleapis.com/" + field("audience")[len("//iam.googleapis.com/"):]]
    audience = claims.get("aud")
    if not (set(audience if isinstance(audience, list) else [audience]) & set(allowed)):
        return 400, oauth_error("invalid_grant", "The audience in ID Token [%s] does not match the expected audience." % audience)
    if not claims.get("sub") or claims.get("exp", 0) <= now or claims.get("exp", 0) - claims.get("iat", 0) > 48 * 3600 or claims.get("iat", now + 1) > now + 60:
        return 400, oauth_error("invalid_grant", "ID Token issued at %s is stale to sign-in or expired." % claims.get("iat"))
    for name, wanted in provider.get("condition", {}).items():
        if claims.get(name) != wanted:
            return 400, oauth_error("unauthorized_client", "The given credential is rejected by the attribute condition.")
    scope = field("scope")
    if not scope:
        return 400, oauth_error("invalid_request", "Scope(s) must be provided.")
    pool = field("audience")[len("//iam.googleapis.com/"):].rsplit("/providers/", 1)[0]
    token = "fed." + secrets.token_urlsafe(40)
    lifetime = min(3600, claims["exp"] - now)
    state["tokens"][token] = {"token": token, "scope": scope, "user": False, "federated": True,
                              "identity": "principal://iam.googleapis.com/%s/subject/%s" % (pool, claims["sub"]),
                              "repository": claims.get("repository"), "expires": now + lifetime}
    state["sts_calls"].append({"audience": field("audience"), "scope": scope, "options": field("options")})
    return 200, {"access_token": token, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                 "token_type": "Bearer", "expires_in": lifetime}


def members(entry):
    """The IAM members a token's caller counts as: its identity, and for a federated one the
    principalSet of its repository."""
    found = [entry["identity"]]
    if entry.get("repository"):
        found.append("repository:" + entry["repository"])
    return found


def generate_access_token(state, caller, email, body, now, rfc3339):
    """IAM Credentials: (status, answer)."""
    def denied():
        return 403, {"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
                               "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                                                           "reason": "IAM_PERMISSION_DENIED", "domain": "iam.googleapis.com",
                                                                           "metadata": {"permission": "iam.serviceAccounts.getAccessToken"}}]}}
    if caller is None or caller.get("expires", now + 1) <= now:
        return 401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}
    if not set(caller["scope"].split()) & {CLOUD, IAM_SCOPE}:
        return 403, {"error": {"code": 403, "message": "Request had insufficient authentication scopes.", "status": "PERMISSION_DENIED",
                               "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                                            "domain": "googleapis.com", "metadata": {"service": "iamcredentials.googleapis.com"}}]}}
    scopes = body.get("scope") or []
    if not scopes:
        return 400, {"error": {"code": 400, "message": "Scope required.", "status": "INVALID_ARGUMENT"}}
    lifetime = int(str(body.get("lifetime", "3600s")).rstrip("s") or 3600)
    if lifetime > state["config"].get("max_lifetime", 3600):
        return 400, {"error": {"code": 400, "message": "The lifetime must be at most 3600s.", "status": "INVALID_ARGUMENT"}}
    allowed_calls = state["config"].get("iam_allow_calls")
    if allowed_calls is not None and len(state["iam_calls"]) >= allowed_calls:
        return denied()  # the binding was removed meanwhile
    chain = [d.rsplit("/", 1)[-1] for d in body.get("delegates") or []] + [email]
    current = members(caller)
    for account in chain:
        if not set(current) & set(state["grants"].get(account, [])):
            return denied()
        current = [account]
    state["iam_calls"].append({"target": email, "scope": scopes, "lifetime": lifetime, "delegates": body.get("delegates") or []})
    lifetime = min(lifetime, state["config"].get("token_lifetime") or lifetime)
    token = "ya29.sa." + secrets.token_urlsafe(40)
    state["tokens"][token] = {"token": token, "scope": " ".join(scopes), "user": False, "identity": email, "expires": now + lifetime}
    return 200, {"accessToken": token, "expireTime": rfc3339(now + lifetime)}


def github_token(state, authorization, audience, issuer, now):
    """GitHub's runner endpoint: `{"value": jwt}` for the job's request token."""
    if authorization.lower() != "bearer " + state["config"].get("github_request_token", "").lower() or not state["config"].get("github_request_token"):
        return 401, {"message": "Bad credentials"}
    claims = dict(state["config"].get("github_claims", {}))
    claims.update({"iss": issuer, "aud": audience, "iat": int(now), "exp": int(now) + 300, "nbf": int(now)})
    return 200, {"count": 1, "value": sign(claims)}


def timestamp():
    return int(time.time())
