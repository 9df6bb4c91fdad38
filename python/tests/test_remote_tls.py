"""HTTPS: WebDataset tars read over https:// from nginx on loopback with a self-signed
certificate. libcurl reads no environment variable and carries the CA file of the system it
was built on; stoker gives it $CURL_CA_BUNDLE or $SSL_CERT_FILE, else the system's file
(net/ca_bundle.h). Each read runs in a fresh process: the file is chosen once per process."""
import os
import shutil
import subprocess
import sys

from test_image_folder_source import make_folder
from test_webdataset_source import write_tars

READ = """
import sys, stoker
loader = stoker.Loader(stoker.WebDataset(sys.argv[1]), batch_size=4, shuffle=False,
                       batch_format="dict", cache_dir=sys.argv[2],
                       transforms={"image": stoker.transforms.RawBytes(1 << 20)})
print(sum(len(batch["image"]) for batch in loader))
"""


def read(url, cache, **environment):
    """The sample count a fresh process reads from `url`, or its failure (exit status, stderr's
    last line), with `environment` added and the CA variables unset otherwise."""
    env = {k: v for k, v in os.environ.items() if k not in ("CURL_CA_BUNDLE", "SSL_CERT_FILE")}
    done = subprocess.run([sys.executable, "-c", READ, url, str(cache)], capture_output=True,
                          text=True, env={**env, **environment}, timeout=300)
    if done.returncode == 0:
        return int(done.stdout.split()[-1])
    return done.returncode, done.stderr.strip().splitlines()[-1]


def test_a_certificate_authority_named_by_the_environment_is_trusted(nginx_tls_server,
                                                                    tmp_path):
    tars = write_tars(make_folder(tmp_path / "folder"), tmp_path / "tars")
    shutil.copytree(os.path.dirname(tars[0]), nginx_tls_server.root / "tars")
    url = f"{nginx_tls_server.url}/tars/data-{{000..{len(tars) - 1:03d}}}.tar"
    status, message = read(url, tmp_path / "untrusted")
    assert status != 0 and "\n" not in message
    assert "127.0.0.1" in message and "certificate" in message.lower()
    certificate = nginx_tls_server.certificate
    assert read(url, tmp_path / "by-ssl-cert-file", SSL_CERT_FILE=certificate) == 23
    assert read(url, tmp_path / "by-curl-ca-bundle", CURL_CA_BUNDLE=certificate) == 23
