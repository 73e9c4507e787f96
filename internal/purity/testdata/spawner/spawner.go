// Package spawner is an impure package for the purity tests: it starts a
// goroutine, on line 7.
package spawner

func Start(f func()) {
	defer f()
	go f()
}
