# sfubot: `make demo` and `make test` are the quick start (README). Both install what is
# missing, build, and run the scene inside a private network namespace with a local Janus
# (tests: and a local RabbitMQ with Web-STOMP).
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

.PHONY: deps build demo test bench clean

deps:
	@scripts/install-deps

build: deps
	swift build

demo: build
	scripts/in-netns scripts/demo

test: build
	swift build --build-tests
	SFUBOT_WITH_RABBITMQ=1 scripts/in-netns swift test --skip-build

bench: deps
	swift build -c release --product sfubot-bench
	.build/release/sfubot-bench

clean:
	rm -rf .build .run
