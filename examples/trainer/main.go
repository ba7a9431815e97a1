package main

import (
	"fmt"
	"os"
)

func main() {
	d, err := loadDigits()
	if err != nil {
		panic(err)
	}
	train, test := split(d, 1, 0.2)
	m, err := newMLP(32, []int{64, 32}, 1)
	if err != nil {
		panic(err)
	}
	opt := newAdam(1e-3, m.params)
	l := newLoader(1, train.Len())
	for s := range 2000 {
		loss, err := m.step(train, l.next(32))
		if err != nil {
			panic(err)
		}
		if err := opt.update(m.params); err != nil {
			panic(err)
		}
		if s%200 == 0 {
			fmt.Println(s, loss, m.accuracy(test))
		}
	}
	fmt.Println(m.digest(), m.accuracy(test))
	os.Exit(0)
}
