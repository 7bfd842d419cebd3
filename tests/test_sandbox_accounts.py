"""A key as a class's account (dubkit.sandbox.accounts): disabled keys, the tasks and storage
quotas, top-ups, a student's reset and removal, and the class report. Real HTTP to the
session's sandbox; every refusal names the quota, what was used and who can raise it."""

from __future__ import annotations

import threading

import pytest
import requests
from _waiting import wait_for

import dubkit
from dubkit import samples
from dubkit.errors import AuthenticationError, InsufficientCreditsError

NO_RETRY = dubkit.RetryPolicy(max_retries=0)


def _student(sandbox, name="ada", **quotas):
    return sandbox.create_key(name, 100, student=True, **quotas)


def test_a_disabled_key_is_refused_with_who_can_enable_it_and_enabled_again(sandbox, client_for):
    key = _student(sandbox)
    client = client_for(key)
    sandbox.update_key(key, disabled=True)
    with pytest.raises(AuthenticationError) as refused:
        client.voices.presets()
    assert refused.value.http_status == 401
    assert "this key is disabled; ask your teacher to enable it (dubkit class enable ada)" in str(
        refused.value
    )
    sandbox.update_key(key, disabled=False)
    assert len(client.voices.presets()) > 0


def test_a_key_that_is_not_a_students_names_the_sandboxs_admin(sandbox, client_for):
    key = sandbox.create_key("solo", 0)
    with pytest.raises(InsufficientCreditsError) as refused:
        client_for(key).translate.create(["Hello there"], source="en-US", target="fr-FR")
    message = str(refused.value)
    assert "this key has 0 (0 spent)" in message
    assert "the sandbox's admin can raise it (dubkit.SandboxHandle.update_key)" in message


def test_credits_refusal_says_spent_and_a_top_up_lets_the_same_call_through(sandbox):
    key = _student(sandbox, "bea")
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    sandbox.update_key(key, credits=3)
    client.translate.create(["Hi"], source="en-US", target="fr-FR")  # 1 credit
    long = ["Hello there, this is a longer line to translate. " * 20] * 5
    assert client.translate.quote(long).credits > 2
    with pytest.raises(InsufficientCreditsError) as refused:
        client.translate.create(long, source="en-US", target="fr-FR")
    assert (
        "this key has 2 (1 spent); ask your teacher to raise it (dubkit class topup bea CREDITS)"
        in (str(refused.value))
    )
    assert sandbox.update_key(key, add_credits=100).credits == 102
    client.translate.create(long, source="en-US", target="fr-FR")


def test_the_tasks_quota_refuses_one_more_async_task_and_charges_nothing(sandbox):
    key = _student(sandbox, "cy", max_tasks=2)
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    sandbox.set_timing("polls", 1000)  # tasks stay running while this test looks
    try:
        for i in range(2):
            client.translate.create_async([f"line {i}"], source="en-US", target="fr-FR")
        credits = sandbox.credits(key)
        with pytest.raises(InsufficientCreditsError) as refused:
            client.translate.create_async(["one more"], source="en-US", target="fr-FR")
        assert refused.value.http_status == 402
        assert (
            "the tasks quota of this key is 2 at once and 2 are running; wait for one to "
            "finish, or ask your teacher to raise it (dubkit class limits cy --tasks N)"
        ) in str(refused.value)
        assert sandbox.credits(key) == credits  # refused before the handler: nothing charged
        assert len(client.tasks.list()) == 2
        # Synchronous work is not a running task: it still goes through.
        client.translate.create(["sync"], source="en-US", target="fr-FR")
        sandbox.update_key(key, max_tasks=0)  # 0 lifts the quota
        client.translate.create_async(["now"], source="en-US", target="fr-FR")
        assert len(client.tasks.list(status="running")) == 3
    finally:
        sandbox.set_timing("immediate")
        for task in client.tasks.list():
            client.tasks.delete(task.task_id)


def test_the_tasks_quota_holds_when_many_creates_arrive_at_once(sandbox):
    """Check and create hold the key's lock: eight threads at once get exactly two slots."""
    key = _student(sandbox, "dee", max_tasks=2)
    sandbox.set_timing("polls", 1000)
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def send(i: int) -> None:
        client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
        start.wait()
        try:
            client.translate.create_async([f"line {i}"], source="en-US", target="fr-FR")
            outcomes.append("made")
        except InsufficientCreditsError:
            outcomes.append("refused")

    try:
        threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sandbox.set_timing("immediate")
        client = dubkit.Client(key, sandbox.url)
        for task in client.tasks.list():
            client.tasks.delete(task.task_id)
    assert sorted(outcomes) == ["made"] * 2 + ["refused"] * 6


def test_the_storage_quota_refuses_an_upload_before_its_bytes_are_kept(sandbox, tmp_path):
    key = _student(sandbox, "eve", max_storage=150_000)
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    small = samples.noise_wav(tmp_path / "small.wav", 100_000)
    big = samples.noise_wav(tmp_path / "big.wav", 100_000 + 4_000)
    kept = client.materials.upload(small)
    used = small.stat().st_size
    with pytest.raises(dubkit.DubkitError) as refused:
        client.materials.upload(big)
    assert refused.value.code == 413
    assert (
        f"Storage quota exceeded: this key keeps {used} of its 150000 bytes and this upload "
        f"adds {big.stat().st_size}; delete a material, or ask your teacher to raise it "
        "(dubkit class limits eve --storage SIZE)"
    ) in str(refused.value)
    report = {s.name: s for s in sandbox.class_report().students}
    assert report["eve"].stored == used
    client.materials.delete(kept.material_id)  # a deleted material's bytes no longer count
    client.materials.upload(big)


def test_reset_forgets_one_students_work_and_sets_credits(sandbox):
    ada, bob = _student(sandbox, "fay"), _student(sandbox, "gus")
    for key in (ada, bob):
        dubkit.Client(key, sandbox.url).translate.create(["Hi"], source="en-US", target="fr-FR")
    after = sandbox.reset_key(ada, credits=100)
    assert after.credits == 100
    report = {s.name: s for s in sandbox.class_report().students}
    assert report["fay"].tasks == {} and report["fay"].spent == 0
    assert report["gus"].tasks == {"textTranslation": {"finished": 1}}
    assert len(dubkit.Client(ada, sandbox.url).tasks.list()) == 0


def test_a_removed_key_stops_working_and_the_default_key_cannot_be_removed(sandbox):
    key = _student(sandbox, "hal")
    sandbox.remove_key(key)
    with pytest.raises(AuthenticationError):
        dubkit.Client(key, sandbox.url, retry=NO_RETRY).voices.presets()
    with pytest.raises(dubkit.DubkitError, match="default key cannot be removed"):
        sandbox.remove_key(sandbox.api_key)
    with pytest.raises(dubkit.DubkitError, match="no such key"):
        sandbox.update_key("sk_not_a_key_of_this_sandbox", credits=1)


def test_the_class_report_shows_each_students_use_and_masks_keys(sandbox, client_for, tmp_path):
    key = _student(sandbox, "ivy")
    client = client_for(key)
    speech = client.tts.create(["Hello class"], voice=client.voices.presets()[0])
    client.translate.create(["Hi"], source="en-US", target="fr-FR")
    # A dub whose media broke after upload ends failed, with its message in the report.
    material = client.materials.upload(samples.noise_wav(tmp_path / "n.wav", 50_000))
    stored = sandbox.data_dir / "files" / material.address_url.split("/files/", 1)[1]
    stored.write_bytes(b"not media any more")
    with pytest.raises(dubkit.TaskFailedError):
        client.dubbing.create(material, target="fr-FR").wait(120)
    students = {s.name: s for s in sandbox.class_report().students}
    ivy = students["ivy"]
    assert key not in repr(ivy) and ivy.api_key.endswith(key[-4:])
    assert ivy.tasks["tts"] == {"finished": 1}
    assert ivy.tasks["textTranslation"] == {"finished": 1}
    assert ivy.tasks["at"] == {"failed": 1}
    assert "probe failed" in ivy.errors[0].result["errorMessage"]
    assert ivy.credits + ivy.spent == 100
    assert ivy.last_seen is not None
    assert [t.task_id for t in ivy.latest] == [speech.task_id]  # speech and dubs only
    assert "solo" not in students  # only a roster's keys (everyone=True lists all)
    assert any(s.name == "default" for s in sandbox.class_report(everyone=True).students)


def test_a_students_key_cannot_read_the_class(sandbox):
    key = _student(sandbox, "jo")
    answer = requests.get(
        f"{sandbox.url}/_sandbox/class", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert answer.status_code in (401, 403)
    assert "jo" not in answer.text


def test_the_storage_quota_counts_the_parts_of_a_multipart_upload(sandbox, tmp_path):
    key = _student(sandbox, "kim", max_storage=8_000_000)
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    big = samples.noise_wav(tmp_path / "big.wav", 11 * 2**20)
    with pytest.raises(dubkit.DubkitError) as refused:
        client.materials.upload(
            big, multipart_threshold=5 * 2**20, part_size=5 * 2**20, concurrency=1, resume=False
        )
    assert refused.value.code == 413
    assert "Storage quota exceeded: this key keeps 5242880 of its 8000000 bytes" in str(
        refused.value
    )
    # The client aborted the refused upload: its part no longer counts, and nothing was kept.
    sessions = sandbox.admin("GET", "/uploads", params={"apiKey": key})["sessions"]
    assert [s["state"] for s in sessions] == ["aborted"]
    assert {s.name: s for s in sandbox.class_report().students}["kim"].stored == 0


def test_uploads_sent_at_once_cannot_pass_the_storage_quota_together(sandbox, tmp_path):
    """Bytes on their way are held against the quota: four 3 MB uploads at once, 8 MB quota."""
    key = _student(sandbox, "lou", max_storage=8_000_000)
    files = [samples.noise_wav(tmp_path / f"f{i}.wav", 3_000_000 + i) for i in range(4)]
    outcomes: list[str] = []
    start = threading.Barrier(4)

    def send(path) -> None:
        client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
        start.wait()
        try:
            client.materials.upload(path, progress=False)
            outcomes.append("kept")
        except dubkit.DubkitError as exc:
            outcomes.append(f"refused {exc.code}")

    threads = [threading.Thread(target=send, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["kept"] * 2 + ["refused 413"] * 2
    assert {s.name: s for s in sandbox.class_report().students}["lou"].stored <= 8_000_000


def test_deleting_a_running_task_does_not_free_its_slot(sandbox):
    """Deleting a task does not stop its work, so it still holds one of the key's slots."""
    key = _student(sandbox, "max", max_tasks=1)
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    sandbox.set_timing("polls", 1000)
    try:
        task = client.translate.create_async(["first"], source="en-US", target="fr-FR")
        client.tasks.delete(task.task_id)
        with pytest.raises(InsufficientCreditsError, match="1 are running"):
            client.translate.create_async(["second"], source="en-US", target="fr-FR")
    finally:
        sandbox.set_timing("immediate")


def test_a_removed_keys_events_are_skipped_not_retried_forever(sandbox):
    key = _student(sandbox, "ned")
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    sandbox.set_timing("seconds", 0.5)
    try:
        task = client.translate.create_async(["soon gone"], source="en-US", target="fr-FR")
        sandbox.remove_key(key)
    finally:
        sandbox.set_timing("immediate")

    def rows() -> list[dict]:
        listed = sandbox.deliveries(task_id=task.task_id)["deliveries"]
        return [r for r in listed if r["state"] != "pending"]

    ended = wait_for(rows)
    assert [(r["state"], r["lastError"]) for r in ended] == [("skipped", "the key was removed")]


def test_work_a_reset_forgot_gives_no_credits_back_after_it(sandbox, tmp_path):
    """A reset sets the grant; a forgotten task that fails later refunds nothing on top."""
    key = sandbox.create_key("oli", 1000, student=True)
    client = dubkit.Client(key, sandbox.url, retry=NO_RETRY)
    long = client.materials.upload(
        samples.narrated_clip(
            tmp_path / "long.mp4", [f"Line {i} of a longer talk." for i in range(6)]
        ),
        progress=False,
    )
    doomed = client.materials.upload(samples.noise_wav(tmp_path / "n.wav", 50_000), progress=False)
    stored = sandbox.data_dir / "files" / doomed.address_url.split("/files/", 1)[1]
    stored.write_bytes(b"not media any more")
    # Two long dubs hold the key's share of the pipeline, so the doomed one waits its turn.
    tasks = [client.dubbing.create(long, target=t) for t in ("fr-FR", "de-DE")]
    tasks.append(client.dubbing.create(doomed, target="fr-FR"))
    sandbox.reset_key(key, credits=100)

    def ended() -> bool:  # each task's end queues its webhook row, forgotten or not
        return all(sandbox.deliveries(task_id=t.task_id)["deliveries"] for t in tasks)

    assert wait_for(ended)
    assert sandbox.credits(key) == 100
