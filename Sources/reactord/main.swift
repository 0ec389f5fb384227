import Foundation
import ReactorServer

// A write past the file-size limit (RLIMIT_FSIZE) must fail with EFBIG, reported as a disk error,
// rather than kill reactord or one of its data-directory tools halfway through.
signal(SIGXFSZ, SIG_IGN)

Reactord.main()
