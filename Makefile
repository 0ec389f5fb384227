# Shorthands for the scripts in scripts/, which are what README and CI use.
.PHONY: setup run test test-tsan bench-core bench-http bench-instructions bench-durability bench-fanout fuzz autobahn

setup:
	scripts/setup.sh

run:
	scripts/run.sh

test:
	scripts/test.sh

test-tsan:
	scripts/test.sh --tsan

bench-core:
	scripts/bench-core.sh

bench-fanout:
	scripts/bench-fanout.sh

bench-http:
	scripts/bench-http.sh

bench-instructions:
	scripts/bench-instructions.sh

bench-durability:
	scripts/bench-durability.sh

fuzz:
	scripts/fuzz.sh

autobahn:
	scripts/autobahn.sh
