# sfubot: `make demo` and `make test` are the quick start (README). Both install what is
# missing, build, and run the scene inside a private network namespace with a local Janus
# (tests: and a local RabbitMQ with Web-STOMP).
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

.PHONY: deps build demo test test-build test-venvs test-swift test-chromium tsan tsan-build fuzz-build bench bench-chromium bench-load bench-record bench-limits soak fuzz clean

deps:
	@scripts/install-deps

build: deps
	swift build

demo: build
	scripts/in-netns scripts/demo

# In three parts, which CI (.ci/run) runs and times one by one; ends with the 20 slowest tests.
test: test-build
	$(MAKE) test-swift
	$(MAKE) test-chromium
	@scripts/slowest-tests

# The build with the tests; fails on a compiler warning in our own code (scripts/check-warnings).
test-build: deps
	scripts/check-warnings

# The Python venvs the tests use (made once, from PyPI: the tests run where there is no network),
# and the Kubernetes manifests checked.
test-venvs:
	scripts/validate-k8s
	scripts/schemathesis-venv
	scripts/s3-venv
	scripts/ws-venv

# `swift test` on what test-build built, in three namespaces at once (scripts/test-lanes).
test-swift: test-venvs
	@# The failures again at the end, where a CI log's tail shows them.
	scripts/test-lanes || { scripts/slowest-tests; echo "── what failed:"; grep -aE "✘|recorded an issue" .build/test.log | tail -40; exit 1; }

# Chromium (libwebrtc, as ECall phones) against sfubot: shared frame vectors, Chromium subscribed
# to `sfubot play --test-pattern`, and Chromium publishing to `sfubot record` with the key, another
# key and no transform (Tests/Chromium/README.md). Then the same both ways in libwebrtc's
# FrameCryptor format (PQSRTC, LiveKit) and in SFrame (RFC 9605, audio), each sealed and opened in
# Chromium by JavaScript written from those sources, and a recorder with the wrong ratchet salt.
# 12 s, not 8: the ~0.8 s before the recorder subscribes is lost, and 8 s of ECall measured 89.6 %
# of the audio frames reaching it (the bound is 90 %).
test-chromium: build
	Tests/Chromium/run-vectors
	Tests/Chromium/run-vectors formats-vectors.html
	scripts/in-netns Tests/Chromium/run-subscriber
	MODE=audio-file scripts/in-netns Tests/Chromium/run-subscriber
	scripts/in-netns Tests/Chromium/run-publisher
	MODE=resize RESIZE_TWICE=1 SECOND_RECORDER=wrong-key PUBLISH_SECONDS=18 scripts/in-netns Tests/Chromium/run-publisher
	LATE_RECORDER=3 PUBLISH_SECONDS=12 scripts/in-netns Tests/Chromium/run-publisher
	MODE=wrong-key PUBLISH_SECONDS=8 scripts/in-netns Tests/Chromium/run-publisher
	MODE=relay JANUS_RTP_PORTS=13500-13599 scripts/in-netns Tests/Chromium/run-publisher
	MODE=plaintext PUBLISH_SECONDS=8 scripts/in-netns Tests/Chromium/run-publisher
	MODE=framecryptor SECONDS_TO_PLAY=10 scripts/in-netns Tests/Chromium/run-subscriber
	MODE=sframe scripts/in-netns Tests/Chromium/run-subscriber
	MODE=bridge scripts/in-netns Tests/Chromium/run-subscriber
	MODE=framecryptor PUBLISH_SECONDS=12 scripts/in-netns Tests/Chromium/run-publisher
	MODE=wrong-salt PUBLISH_SECONDS=8 scripts/in-netns Tests/Chromium/run-publisher
	MODE=sframe PUBLISH_SECONDS=12 scripts/in-netns Tests/Chromium/run-publisher

# ThreadSanitizer over every test that needs no Janus (the integration tests switch themselves
# off without SFUBOT_JANUS_URL), built apart in .build/tsan with -DSFUBOT_TSAN (the `Locked`
# lock becomes a pthread mutex TSan sees: Sources/Locking). A report fails the run (exit 66);
# what is suppressed, and why, is in Tests/tsan.supp.
# The test binary itself, 6 tests at once: all ~580 at once under TSan (several times slower)
# starved the cores, and tests bounded in time (a 10 s handshake, a 30 s hang check) failed.
# scripts/tsan-run keeps the output in .build/tsan.log, prints a summary, and runs a suite that
# failed with no report once more alone (FLAKY, as the lanes do).
tsan: tsan-build
	scripts/tsan-run

tsan-build: deps
	swift build --build-tests --sanitize=thread -Xswiftc -DSFUBOT_TSAN --scratch-path .build/tsan

bench: deps
	swift build -c release --product sfubot-bench
	.build/release/sfubot-bench
	$(MAKE) bench-chromium

# CPU-s/s and PSS of headless Chromium's process tree publishing sealed audio for 30 s, next to
# `sfubot play` (release) doing the same (Tests/Chromium/bench).
bench-chromium: deps
	swift build -c release --product sfubot
	SFUBOT=.build/release/sfubot scripts/in-netns Tests/Chromium/bench

# How many E2EE bots one core of sfubot carries, against the local Janus, directly and through a
# coturn of its own (prints figures; scripts/bench-load says which).
bench-load: deps
	swift build -c release --product sfubot
	swift build -c release --product sfubot-bench
	scripts/in-netns scripts/bench-load

# How many A/V participants one `sfubot record` records per core, and whether every frame sent
# reached its file (PUBLISHERS=20 by default; prints figures).
bench-record: deps
	swift build -c release --product sfubot
	swift build -c release --product sfubot-bench
	scripts/in-netns scripts/bench-record

# Issue 42's figures in one run: bench-record at the ECall preset, then bench-load's A/V part,
# the lines with a target printed together at the end with the load averages.
bench-limits: deps
	swift build -c release --product sfubot
	swift build -c release --product sfubot-bench
	scripts/in-netns scripts/bench-limits

# A recorder, a player and 20 load bots in one E2EE room for an hour (SOAK_SECONDS=N for less);
# fails on growth of RSS, descriptors or threads above 5 % or on any lost frame.
soak: deps
	swift build -c release --product sfubot
	scripts/in-netns scripts/soak

# libFuzzer targets (Sources/Fuzz*/) with AddressSanitizer, 10^6 inputs each from the seed
# corpus in Tests/Fuzz/Corpus/ (FUZZ_RUNS=N for another count, FUZZ_SECONDS=S for a time each);
# built in .build/fuzz, apart from the normal build. Crashes land in .build/fuzz/crashes/.
fuzz: deps
	Tests/Fuzz/run

fuzz-build: deps
	FUZZ_BUILD_ONLY=1 Tests/Fuzz/run

clean:
	rm -rf .build .run
