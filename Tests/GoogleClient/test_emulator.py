"""ivy-emulator checked by Google's own Python clients (issue 28).

google-api-python-client builds its Drive v3 methods from the discovery document it ships
and google-auth refreshes tokens: code nobody here wrote, so an answer the emulator gives
that Google would not (or a request shape Google takes that the emulator refuses) fails here.

Run with scripts/google-client-check (it builds nothing: the emulator binary must exist).
"""

import io
import json
import os
import re
import subprocess
import sys

import google_auth_httplib2
import httplib2
import pytest
import requests
from google.auth.exceptions import RefreshError
from google.auth.transport.requests import Request
from google.oauth2.credentials import Credentials
from googleapiclient import discovery_cache
from googleapiclient.discovery import build_from_document
from googleapiclient.errors import HttpError
from googleapiclient.http import MediaIoBaseDownload, MediaIoBaseUpload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("IVY_EMULATOR", os.path.join(ROOT, ".build", "debug", "ivy-emulator"))
CLIENT_ID = "ivy-emulator.apps.googleusercontent.com"
CLIENT_SECRET = "emulator-secret"
SCOPES = ["openid", "email", "https://www.googleapis.com/auth/drive.file"]
FOLDER = "application/vnd.google-apps.folder"
# The emulator's control API answers only requests with the secret it prints at start; the
# fixture puts it on this session.
CONTROL = requests.Session()
# The emulator serves HTTPS (HTTP/2 or HTTP/1.1 by ALPN, as Google does) with a certificate
# authority of its own, which its export line names as IVY_CA_FILE; the fixture sets this to it.
CA_FILE = None


class RecordingHttp(httplib2.Http):
    """httplib2 that keeps every request it sends, to look at what the client put on the wire."""

    def __init__(self):
        super().__init__(timeout=30, ca_certs=CA_FILE)
        # What googleapiclient.http.build_http does to its own: a resumable upload's 308 is
        # "Resume Incomplete", not a redirect (Drive sends it without a Location).
        self.redirect_codes = self.redirect_codes - {308}
        self.sent = []

    def request(self, uri, method="GET", body=None, headers=None, **kwargs):
        self.sent.append((method, uri, headers or {}, body))
        return super().request(uri, method=method, body=body, headers=headers, **kwargs)


@pytest.fixture(scope="module")
def emulator():
    """A fresh ivy-emulator on a free loopback port; stopped (and waited for) afterwards."""
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"no emulator at {BINARY}; run `swift build` first or set IVY_EMULATOR")
    process = subprocess.Popen(
        [BINARY, "serve", "--port", "0", "--seed", "28"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("https://"), f"the emulator printed {url!r} instead of its URL"
        export_line = process.stdout.readline()
        secret = re.search(r"\bIVY_EMULATOR_SECRET=(\S+)", export_line)
        assert secret, f"the emulator's export line {export_line!r} has no IVY_EMULATOR_SECRET"
        CONTROL.headers["X-Ivy-Emulator-Secret"] = secret.group(1)
        authority = re.search(r"\bIVY_CA_FILE=(\S+)", export_line)
        assert authority, f"the emulator's export line {export_line!r} has no IVY_CA_FILE"
        global CA_FILE
        CA_FILE = authority.group(1)
        # requests (and google-auth's transport, which is requests) trust it through this variable.
        os.environ["REQUESTS_CA_BUNDLE"] = CA_FILE
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def sign_in(url):
    """The device flow with plain requests, approved through the emulator's control API."""
    code = requests.post(f"{url}/device/code", data={"client_id": CLIENT_ID, "scope": " ".join(SCOPES)}, timeout=10)
    assert code.status_code == 200, code.text
    approved = CONTROL.post(f"{url}/_emulator/approve", json={"user_code": code.json()["user_code"]}, timeout=10)
    assert approved.status_code == 200, approved.text
    tokens = requests.post(
        f"{url}/token",
        data={
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "device_code": code.json()["device_code"],
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        },
        timeout=10,
    )
    assert tokens.status_code == 200, tokens.text
    return tokens.json()


def credentials(url, tokens):
    return Credentials(
        token=tokens["access_token"],
        refresh_token=tokens["refresh_token"],
        token_uri=f"{url}/token",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        scopes=tokens["scope"].split(),
    )


@pytest.fixture(scope="module")
def session(emulator):
    tokens = sign_in(emulator)
    creds = credentials(emulator, tokens)
    wire = RecordingHttp()
    # The discovery document shipped inside the package, with only its rootUrl the emulator's.
    # (client_options' api_endpoint would not do: the client moves media uploads to its host
    # but keeps https, which a loopback emulator does not speak.)
    document = json.loads(discovery_cache.get_static_doc("drive", "v3"))
    document["rootUrl"] = f"{emulator}/"
    drive = build_from_document(document, http=google_auth_httplib2.AuthorizedHttp(creds, http=wire))
    return {"url": emulator, "tokens": tokens, "creds": creds, "drive": drive, "wire": wire}


def reason(error):
    return json.loads(error.content)["error"]["errors"][0]["reason"]


def folder(drive, name, parent=None):
    body = {"name": name, "mimeType": FOLDER}
    if parent:
        body["parents"] = [parent]
    return drive.files().create(body=body, fields="id").execute()["id"]


def download(drive, file_id):
    return drive.files().get_media(fileId=file_id).execute()


def test_granted_scope_uses_googles_names(session):
    assert "https://www.googleapis.com/auth/userinfo.email" in session["tokens"]["scope"].split()
    assert "email" not in session["tokens"]["scope"].split()


def test_multipart_create_with_lf_line_endings_keeps_metadata(session):
    drive, wire = session["drive"], session["wire"]
    parent = folder(drive, "books")
    media = MediaIoBaseUpload(io.BytesIO(b"{\"title\": \"A\"}\r\n"), mimetype="application/json")
    created = (
        drive.files()
        .create(
            body={
                "name": "book_a.json",
                "parents": [parent],
                "modifiedTime": "2024-05-01T10:00:00.123Z",
                "description": "book a",
                "appProperties": {"ivyId": "a"},
            },
            media_body=media,
            fields="id,name,parents,modifiedTime,description,appProperties,md5Checksum,size",
        )
        .execute()
    )
    method, uri, headers, body = wire.sent[-1]
    assert "uploadType=multipart" in uri
    assert b"\r\n" not in body.split(b"\n\n", 1)[0], "the client sends LF line endings"
    assert created["name"] == "book_a.json" and created["parents"] == [parent]
    assert created["modifiedTime"] == "2024-05-01T10:00:00.123Z"
    assert created["description"] == "book a" and created["appProperties"] == {"ivyId": "a"}
    assert created["size"] == "16"
    assert download(drive, created["id"]) == b"{\"title\": \"A\"}\r\n"


def test_media_create_and_content_updates(session):
    drive, wire = session["drive"], session["wire"]
    plain = drive.files().create(
        media_body=MediaIoBaseUpload(io.BytesIO(b"hello"), mimetype="text/plain"), fields="id,name,mimeType"
    ).execute()
    assert "uploadType=media" in wire.sent[-1][1]
    assert plain["name"] == "Untitled" and plain["mimeType"] == "text/plain"

    file_id = plain["id"]
    drive.files().update(
        fileId=file_id, media_body=MediaIoBaseUpload(io.BytesIO(b"second"), mimetype="text/plain")
    ).execute()
    method, uri, _, _ = wire.sent[-1]
    assert method == "PATCH" and f"/upload/drive/v3/files/{file_id}" in uri
    assert download(drive, file_id) == b"second"

    big = bytes(range(256)) * 2400  # 600 KiB: three chunks of 256 KiB, 308s between them
    resumable = MediaIoBaseUpload(io.BytesIO(big), mimetype="audio/mpeg", chunksize=256 * 1024, resumable=True)
    updated = drive.files().update(fileId=file_id, body={"name": "clip.mp3"}, media_body=resumable, fields="id,name,size").execute()
    assert updated == {"id": file_id, "name": "clip.mp3", "size": str(len(big))}
    assert download(drive, file_id) == big


def test_resumable_create(session):
    drive = session["drive"]
    data = os.urandom(300 * 1024)
    media = MediaIoBaseUpload(io.BytesIO(data), mimetype="audio/mpeg", chunksize=256 * 1024, resumable=True)
    request = drive.files().create(body={"name": "clip_b.mp3"}, media_body=media, fields="id,size")
    response = None
    chunks = 0
    while response is None:
        _, response = request.next_chunk()
        chunks += 1
    assert chunks == 2 and response["size"] == str(len(data))
    assert download(drive, response["id"]) == data


def test_update_moves_only_by_add_and_remove_parents(session):
    drive = session["drive"]
    first, second = folder(drive, "from"), folder(drive, "to")
    file_id = drive.files().create(body={"name": "moving", "parents": [first]}, fields="id").execute()["id"]
    with pytest.raises(HttpError) as refused:
        drive.files().update(fileId=file_id, body={"parents": [second]}).execute()
    assert refused.value.resp.status == 403 and reason(refused.value) == "fieldNotWritable"
    moved = drive.files().update(fileId=file_id, addParents=second, removeParents=first, fields="parents").execute()
    assert moved["parents"] == [second]
    kept = drive.files().update(
        fileId=file_id, body={"description": "d", "appProperties": {"k": "v"}, "modifiedTime": "2020-02-02T02:02:02Z"},
        fields="description,appProperties,modifiedTime",
    ).execute()
    assert kept == {"description": "d", "appProperties": {"k": "v"}, "modifiedTime": "2020-02-02T02:02:02.000Z"}


def test_list_order_page_size_and_query_terms(session):
    drive = session["drive"]
    parent = folder(drive, "listing")
    for name in ["b10", "B2", "a", "HelloWorld"]:
        drive.files().create(body={"name": name, "parents": [parent]}).execute()
    query = f"'{parent}' in parents and 'me' in owners and starred = false and modifiedTime > '2000-01-01T00:00:00'"
    listed = drive.files().list(q=query, orderBy="name_natural desc", pageSize=5000, fields="files(name)").execute()
    assert [f["name"] for f in listed["files"]] == ["HelloWorld", "b10", "B2", "a"]

    names, request = [], drive.files().list(q=f"'{parent}' in parents", orderBy="name", pageSize=3, fields="nextPageToken,files(name)")
    while request is not None:
        page = request.execute()
        names += [f["name"] for f in page["files"]]
        request = drive.files().list_next(request, page)
    assert names == ["a", "b10", "B2", "HelloWorld"]

    prefix = drive.files().list(q="name contains 'Hello'", fields="files(name)").execute()["files"]
    assert [f["name"] for f in prefix] == ["HelloWorld"]
    assert drive.files().list(q="name contains 'World'", fields="files(name)").execute()["files"] == []


def test_root_parent_is_a_real_id(session):
    drive = session["drive"]
    made = drive.files().create(body={"name": "at the root"}, fields="id,parents").execute()
    root = made["parents"][0]
    assert root != "root"
    listed = drive.files().list(q=f"'{root}' in parents and name = 'at the root'", fields="files(id)").execute()
    assert listed["files"] == [{"id": made["id"]}]


def test_unknown_fields_answer_400(session):
    drive = session["drive"]
    file_id = drive.files().create(body={"name": "fields"}, fields="id").execute()["id"]
    with pytest.raises(HttpError) as typo:
        drive.files().get(fileId=file_id, fields="id,nmae").execute()
    assert typo.value.resp.status == 400
    with pytest.raises(HttpError):
        drive.files().list(fields="files(id,canAddChildren)").execute()
    assert drive.about().get(fields="user(emailAddress)").execute()["user"]["emailAddress"] == "alice@example.com"


def test_ranged_downloads(session):
    drive = session["drive"]
    data = b"0123456789"
    file_id = drive.files().create(
        body={"name": "digits"}, media_body=MediaIoBaseUpload(io.BytesIO(data), mimetype="text/plain"), fields="id"
    ).execute()["id"]
    tail = drive.files().get_media(fileId=file_id)
    tail.headers["Range"] = "bytes=-3"
    assert tail.execute() == b"789"
    past = drive.files().get_media(fileId=file_id)
    past.headers["Range"] = "bytes=10-"
    with pytest.raises(HttpError) as unsatisfiable:
        past.execute()
    assert unsatisfiable.value.resp.status == 416

    # The client's own chunked download: Range requests of 4 bytes, the last one short.
    out = io.BytesIO()
    downloader = MediaIoBaseDownload(out, drive.files().get_media(fileId=file_id), chunksize=4)
    done = False
    while not done:
        _, done = downloader.next_chunk()
    assert out.getvalue() == data


@pytest.mark.parametrize("quota,limit", [("user", "defaultPerMinutePerUser"), ("project", "defaultPerMinutePerProject")])
def test_quota_exceeded_in_googles_newer_shape(session, quota, limit):
    """Over its quota knob the emulator answers as Google's newer APIs do (AIP-193): no
    errors[], the reason only in a google.rpc.ErrorInfo detail whose quota_limit says whose
    quota ran out. Google's client reads it as it reads Google's own."""
    drive, url = session["drive"], session["url"]
    knob = CONTROL.post(
        f"{url}/_emulator/read-limit", json={"reads_per_second": 0.0001, "burst": 0, "quota": quota}, timeout=10
    )
    assert knob.status_code == 200, knob.text
    try:
        with pytest.raises(HttpError) as refused:
            drive.files().list(fields="files(id)").execute(num_retries=0)
    finally:
        CONTROL.delete(f"{url}/_emulator/read-limit", timeout=10)
    assert refused.value.resp.status == 403
    body = json.loads(refused.value.content)["error"]
    assert "errors" not in body and body["status"] == "PERMISSION_DENIED"
    assert "'drive.googleapis.com'" in body["message"]
    info = [d for d in body["details"] if d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"]
    assert len(info) == 1 and info[0]["reason"] == "RATE_LIMIT_EXCEEDED" and info[0]["domain"] == "googleapis.com"
    assert info[0]["metadata"]["quota_limit"] == limit
    assert info[0]["metadata"]["service"] == "drive.googleapis.com"
    # googleapiclient's HttpError takes the details as Google's: the ErrorInfo among them.
    assert any(d.get("reason") == "RATE_LIMIT_EXCEEDED" for d in refused.value.error_details)


def test_refresh_and_revoke(session):
    url, creds = session["url"], credentials(session["url"], session["tokens"])
    creds.refresh(Request())
    assert creds.token != session["tokens"]["access_token"]
    assert "https://www.googleapis.com/auth/drive.file" in creds.granted_scopes
    token = session["tokens"]["refresh_token"]
    assert requests.post(f"{url}/revoke", data={"token": token}, timeout=10).status_code == 200
    again = requests.post(f"{url}/revoke", data={"token": token}, timeout=10)
    assert again.status_code == 400 and again.json()["error"] == "invalid_token"
    with pytest.raises(RefreshError):
        creds.refresh(Request())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
