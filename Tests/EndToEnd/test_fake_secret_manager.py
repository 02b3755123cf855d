"""fake_google.py's Secret Manager speaks Google's shapes for what rotation through Secret
Manager (issue 28, part 2) will call: secrets.get and patch with etags, addVersion with its
CRC-32C, versions.list, enable and disable, IAM per permission."""
import base64
import json
import urllib.error
import urllib.request

from fake_google import crc32c
from test_rotation import PROJECT_ID, PROJECT_NUMBER, google  # noqa: F401 (fixture)

TOKEN = "ya29.fake-secret-manager-" + "t" * 30


def call(google, method, path, body=None):
    request = urllib.request.Request(google.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_fake_answers_rotations_calls_as_google_does(google):
    google.control(tokens=[{"token": TOKEN, "scope": "https://www.googleapis.com/auth/cloud-platform", "user": False, "identity": "rotator@x"}],
                   secrets=[{"id": "gemini-key", "versions": ["AQ.first"], "rotation": {"rotationPeriod": "7776000s"}}])
    base = "/v1/projects/%s/secrets/gemini-key" % PROJECT_ID
    status, secret = call(google, "GET", base)
    assert status == 200 and secret["name"] == "projects/%s/secrets/gemini-key" % PROJECT_NUMBER and secret["rotation"]["rotationPeriod"] == "7776000s"
    # Two patches with the same etag: exactly one wins.
    first = call(google, "PATCH", base + "?updateMask=annotations", {"annotations": {"gemvault-rotation": "a"}, "etag": secret["etag"]})
    second = call(google, "PATCH", base + "?updateMask=annotations", {"annotations": {"gemvault-rotation": "b"}, "etag": secret["etag"]})
    assert first[0] == 200 and first[1]["annotations"] == {"gemvault-rotation": "a"} and first[1]["etag"] != secret["etag"]
    assert second[0] == 400 and second[1]["error"]["status"] == "FAILED_PRECONDITION"
    data = b"AQ.second"
    bad = call(google, "POST", base + ":addVersion", {"payload": {"data": base64.b64encode(data).decode(), "dataCrc32c": str(crc32c(data) ^ 1)}})
    assert bad[0] == 400 and bad[1]["error"]["status"] == "INVALID_ARGUMENT"
    added = call(google, "POST", base + ":addVersion", {"payload": {"data": base64.b64encode(data).decode(), "dataCrc32c": str(crc32c(data))}})
    assert added[0] == 200 and added[1]["name"].endswith("/versions/2")
    assert call(google, "POST", base + "/versions/1:disable", {})[1]["state"] == "DISABLED"
    listed = call(google, "GET", base + "/versions?filter=state:ENABLED")[1]
    assert [v["name"].rsplit("/", 1)[1] for v in listed["versions"]] == ["2"]
    everything = call(google, "GET", base + "/versions")[1]
    assert [(v["name"].rsplit("/", 1)[1], v["state"]) for v in everything["versions"]] == [("2", "ENABLED"), ("1", "DISABLED")]
    assert call(google, "GET", base + "/versions/latest:access")[1]["payload"]["data"] == base64.b64encode(data).decode()
    google.control(sm_deny_permission=[["rotator@x", "secretmanager.versions.add"]])
    denied = call(google, "POST", base + ":addVersion", {"payload": {"data": "eA=="}})
    assert denied[0] == 403 and denied[1]["error"]["details"][0]["metadata"]["permission"] == "secretmanager.versions.add"
