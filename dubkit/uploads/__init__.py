"""Uploading a file as a material (interface §5) without ever losing a byte.

>>> material = client.materials.upload("talk.mp4")     # what you normally call

What happens:

1. The file is checked (exists, not empty, not text) and its MD5 computed 1 MiB at a time.
2. ``gen-upload-url``: if the service already holds these bytes it answers the material and
   nothing is uploaded.
3. Below ``multipart_threshold``: one PUT of the whole file, then ``complete``.
4. Above: ``multipart/initiate``, parts of ``recommendedPartSize`` (at least 5 MiB, at most
   10000 parts) PUT in parallel by ``concurrency`` threads, each reading its own slice of the
   file, their ETags kept; URLs are presigned in batches and again when they expire; then
   ``multipart/complete``.
5. A small JSON state file (upload id, part size, ETags of finished parts) is written after
   every part. If the process dies or the network goes, calling ``upload`` again resumes:
   only the missing parts are sent. When the upload cannot finish (the service refuses a
   part, the bytes are not media, the file changed) it is aborted and the state removed.

Presigned PUTs go through the client's transport (its retries and errors) without the API
key: the key is attached only to requests below ``base_url``'s API path, and storage URLs may
point at another host, which must never see it.
"""

from ..schema import MIN_PART_SIZE
from .files import DEFAULT_PART_SIZE, MAX_PARTS, MiB, check_media_file, file_md5, part_size_for
from .flow import MULTIPART_THRESHOLD, Upload, UploadError
from .progress import ProgressCallback, UploadProgress
from .state import UploadState, default_state_dir, pending_states

__all__ = [
    "Upload",
    "UploadError",
    "UploadProgress",
    "UploadState",
    "ProgressCallback",
    "check_media_file",
    "file_md5",
    "part_size_for",
    "pending_states",
    "default_state_dir",
    "MULTIPART_THRESHOLD",
    "MIN_PART_SIZE",
    "DEFAULT_PART_SIZE",
    "MAX_PARTS",
    "MiB",
]
