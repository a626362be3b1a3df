package room

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Membership is what a participant's retrylab remembers of the room it
// joined, in a file beside its database (MembershipFile), mode 0600: the
// token in it is the participant's credential.
type Membership struct {
	URL         string `json:"url"`
	Name        string `json:"name"`
	Participant string `json:"participant"`
	Token       string `json:"token"`
}

// MembershipFile is where the room joined with the database at dbPath is
// remembered.
func MembershipFile(dbPath string) string {
	dir, base := filepath.Split(dbPath)
	return filepath.Join(dir, base+".room.json")
}

// LoadMembership reads the remembered room; ok is false when none is.
func LoadMembership(file string) (m Membership, ok bool, err error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Membership{}, false, nil
	}
	if err != nil {
		return Membership{}, false, fmt.Errorf("read the joined room: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Membership{}, false, fmt.Errorf("read the joined room %s: %w", file, err)
	}
	if m.URL == "" || m.Token == "" {
		return Membership{}, false, fmt.Errorf("read the joined room %s: no address or token", file)
	}
	return m, true, nil
}

// SaveMembership remembers the room, replacing the file atomically.
func SaveMembership(file string, m Membership) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(file, append(data, '\n'))
}

// Forget removes the remembered room; forgetting none is not an error.
func Forget(file string) (bool, error) {
	err := os.Remove(file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("forget the room: %w", err)
	}
	return true, nil
}

// writeFileAtomic writes a 0600 file through a temporary one and a rename.
func writeFileAtomic(file string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// Teacher is what the room's host remembers beside the room's database
// (TeacherFile), mode 0600, for 'room status' from another terminal: the
// address, the code and the teacher's token.
type Teacher struct {
	URL   string `json:"url"`
	Code  string `json:"code"`
	Token string `json:"token"`
}

// TeacherFile is where the room hosted on the database at dbPath writes
// its address and teacher token.
func TeacherFile(dbPath string) string {
	dir, base := filepath.Split(dbPath)
	return filepath.Join(dir, base+".room-teacher.json")
}

// SaveTeacher writes the teacher's file.
func SaveTeacher(file string, t Teacher) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(file, append(data, '\n'))
}

// LoadTeacher reads the teacher's file; ok is false when there is none.
func LoadTeacher(file string) (t Teacher, ok bool, err error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Teacher{}, false, nil
	}
	if err != nil {
		return Teacher{}, false, fmt.Errorf("read the room's teacher file: %w", err)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return Teacher{}, false, fmt.Errorf("read the room's teacher file %s: %w", file, err)
	}
	return t, true, nil
}
