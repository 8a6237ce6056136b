# sfubot: `make demo` and `make test` are the quick start (README). Both install what is
# missing, build, and run the scene inside a private network namespace with a local Janus
# (tests: and a local RabbitMQ with Web-STOMP).
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

.PHONY: deps build demo test bench bench-load clean

deps:
	@scripts/install-deps

build: deps
	swift build

demo: build
	scripts/in-netns scripts/demo

test: build
	scripts/validate-k8s
	swift build --build-tests
	SFUBOT_WITH_RABBITMQ=1 scripts/in-netns swift test --skip-build

bench: deps
	swift build -c release --product sfubot-bench
	.build/release/sfubot-bench

# How many E2EE bots one core of sfubot carries, against the local Janus (prints figures).
bench-load: deps
	swift build -c release --product sfubot
	scripts/in-netns scripts/bench-load

clean:
	rm -rf .build .run
