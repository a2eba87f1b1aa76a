#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for pagoda's e2e tests (stdlib only).

Serves every ORG/NAME folder under --repos as a model repository, with the endpoints and headers the Hub returns
(huggingface_hub's file_download.py and the Hub API docs):
  GET  /api/models/ORG/NAME/revision/REV?blobs=true  {"id", "sha": commit, "siblings": [{"rfilename", "blobId",
       "size", "lfs": {"sha256", "size", "pointerSize"}}]}; 404 with X-Error-Code: RepoNotFound otherwise
  GET|HEAD /ORG/NAME/resolve/REV/PATH  an LFS file (.gguf, .safetensors): 302 to /cdn/SHA256 with X-Repo-Commit,
       X-Linked-Etag ("sha256"), X-Linked-Size, ETag; a small file: 200 with its bytes, ETag (git blob id),
       X-Repo-Commit
  GET  /cdn/SHA256  the bytes, honouring Range (206, Content-Range)
Knobs: --cut-after N (the first CDN answer of each file stops after N bytes and drops the connection),
--corrupt PATH (that file's bytes are served with one byte flipped: a wrong checksum), --wrong-etag PATH (its
redirect names another sha256 than the listing), --token T (401 without
"Authorization: Bearer T"), --tls CERT KEY (https instead of http). Writes its port to --port-file once listening and one line per request to --log:
"METHOD PATH RANGE". Run by tests/e2e/cli_hub_test.cc; by hand: test_hub.py --repos DIR --port-file F --log L
"""
import argparse
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = ('.gguf', '.safetensors')


def git_blob_id(data):
    return hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()


class Repo:
    def __init__(self, root, repo_id):
        self.id = repo_id
        self.files = {}  # path -> (abs path, size, blob id, sha256 or None)
        folder = os.path.join(root, repo_id)
        for dirpath, _, names in os.walk(folder):
            for name in sorted(names):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, folder).replace(os.sep, '/')
                data = open(full, 'rb').read()
                sha = hashlib.sha256(data).hexdigest() if rel.endswith(LFS_SUFFIXES) else None
                self.files[rel] = (full, len(data), git_blob_id(data), sha)
        listing = ''.join(f'{p} {v[2]}\n' for p, v in sorted(self.files.items()))
        self.commit = hashlib.sha1(listing.encode()).hexdigest()


class Hub:
    def __init__(self, args):
        self.args = args
        self.repos = {}
        for org in sorted(os.listdir(args.repos)):
            for name in sorted(os.listdir(os.path.join(args.repos, org))):
                repo = Repo(args.repos, f'{org}/{name}')
                self.repos[repo.id] = repo
        self.by_sha = {}
        for repo in self.repos.values():
            for path, (full, size, blob, sha) in repo.files.items():
                if sha:
                    self.by_sha[sha] = (full, size, path)
        self.cut_done = set()
        self.lock = threading.Lock()
        self.log = open(args.log, 'a', buffering=1)


class Handler(BaseHTTPRequestHandler):
    server_version = 'test-hub'

    def log_message(self, *a):
        pass

    def hub(self):
        return self.server.hub

    def record(self):
        with self.hub().lock:
            self.hub().log.write(f'{self.command} {self.path} {self.headers.get("Range", "-")}\n')

    def send(self, status, body=b'', headers=None, content_type='application/json'):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def error(self, status, code, message):
        self.send(status, json.dumps({'error': message}).encode(), {'X-Error-Code': code, 'X-Error-Message': message})

    def authorized(self):
        token = self.hub().args.token
        if token and self.headers.get('Authorization') != f'Bearer {token}':
            self.error(401, 'GatedRepo', 'Access to this model is restricted: you must be authenticated')
            return False
        return True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.record()
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split('/')[1:]]
        if parts[:2] == ['api', 'models'] and len(parts) >= 6 and parts[4] == 'revision':
            return self.listing('/'.join(parts[2:4]), parts[5])
        if parts[:1] == ['cdn'] and len(parts) == 2:
            return self.cdn(parts[1])
        if len(parts) >= 5 and parts[2] == 'resolve':
            return self.resolve('/'.join(parts[0:2]), parts[3], '/'.join(parts[4:]))
        self.error(404, 'EntryNotFound', 'no such endpoint')

    def find_repo(self, repo_id, revision):
        repo = self.hub().repos.get(repo_id)
        if repo is None:
            self.error(404, 'RepoNotFound', f'Repository {repo_id} not found')
            return None
        if revision not in ('main', repo.commit):
            self.error(404, 'RevisionNotFound', f'Invalid rev id: {revision}')
            return None
        return repo

    def listing(self, repo_id, revision):
        if not self.authorized():
            return
        repo = self.find_repo(repo_id, revision)
        if repo is None:
            return
        siblings = []
        for path, (_, size, blob, sha) in sorted(repo.files.items()):
            entry = {'rfilename': path, 'blobId': blob, 'size': size}
            if sha:
                entry['lfs'] = {'sha256': sha, 'size': size, 'pointerSize': 134}
            siblings.append(entry)
        body = {'_id': repo.commit[:24], 'id': repo.id, 'modelId': repo.id, 'author': repo.id.split('/')[0],
                'sha': repo.commit, 'private': False, 'gated': False, 'disabled': False, 'tags': [],
                'siblings': siblings}
        self.send(200, json.dumps(body).encode())

    def resolve(self, repo_id, revision, path):
        if not self.authorized():
            return
        repo = self.find_repo(repo_id, revision)
        if repo is None:
            return
        if path not in repo.files:
            return self.error(404, 'EntryNotFound', f'{path} does not exist on "{revision}"')
        full, size, blob, sha = repo.files[path]
        headers = {'X-Repo-Commit': repo.commit, 'Accept-Ranges': 'bytes'}
        if sha:
            linked = hashlib.sha256(b'other').hexdigest() if path == self.hub().args.wrong_etag else sha
            headers.update({'Location': f'/cdn/{sha}', 'X-Linked-Etag': f'"{linked}"', 'X-Linked-Size': str(size),
                            'ETag': f'"{blob}"'})
            return self.send(302, b'', headers, 'text/plain')
        headers['ETag'] = f'"{blob}"'
        self.send(200, open(full, 'rb').read(), headers, 'application/octet-stream')

    def cdn(self, sha):
        entry = self.hub().by_sha.get(sha)
        if entry is None:
            return self.error(404, 'EntryNotFound', 'no such object')
        full, size, path = entry
        data = bytearray(open(full, 'rb').read())
        if path == self.hub().args.corrupt and data:
            data[len(data) // 2] ^= 0xFF
        start = 0
        status = 200
        headers = {'Accept-Ranges': 'bytes', 'ETag': f'"{sha}"'}
        rng = self.headers.get('Range')
        if rng and rng.startswith('bytes=') and rng.endswith('-'):
            start = int(rng[len('bytes='):-1])
            if start >= size:
                return self.send(416, b'', {'Content-Range': f'bytes */{size}'}, 'text/plain')
            status = 206
            headers['Content-Range'] = f'bytes {start}-{size - 1}/{size}'
        body = bytes(data[start:])
        cut = self.hub().args.cut_after
        with self.hub().lock:
            do_cut = cut is not None and sha not in self.hub().cut_done and len(body) > cut
            if do_cut:
                self.hub().cut_done.add(sha)
        if not do_cut:
            return self.send(status, body, headers, 'application/octet-stream')
        # Announce the whole body, send part of it, and drop the connection.
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body[:cut])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repos', required=True)
    parser.add_argument('--port-file', required=True)
    parser.add_argument('--log', required=True)
    parser.add_argument('--cut-after', type=int)
    parser.add_argument('--corrupt')
    parser.add_argument('--wrong-etag')
    parser.add_argument('--token')
    parser.add_argument('--tls', nargs=2, metavar=('CERT', 'KEY'))
    args = parser.parse_args()
    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    if args.tls:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.hub = Hub(args)
    tmp = args.port_file + '.tmp'
    with open(tmp, 'w') as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
