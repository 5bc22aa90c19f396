module fsguard

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/gabriel-vasile/mimetype v1.4.16
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

require github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
